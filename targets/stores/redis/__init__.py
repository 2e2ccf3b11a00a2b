"""The Redis store: one atomic Lua script per algorithm (``lua/``), run by EVALSHA in one round
trip, the TTL written by the same script, keys hash-tagged for Redis Cluster, Redis server time
by default. See docs/redis.md for the key layout, the modes and the failure behaviour.

- scripts.py: script sources, key layout, argument encoding, reply decoding;
- store.py: ``RedisStore`` (sync) and ``AsyncRedisStore`` (async), the ``shared`` mode;
- modes.py: ``local_params``, ``LeasedStore``, ``NaiveStore``;
- failover.py: ``FailoverStore`` (fail-open / fail-closed, outage counters and log lines);
- connect.py: clients from a REDIS_URL and the start-up check; errors.py: ``RedisConfigError``;
- factory.py: ``RedisSettings`` and ``open_store``, the one call a target needs;
- bench.py: ``python -m benchmarks.redis_store``.
"""

from .errors import RedisConfigError
from .factory import RedisSettings, open_store
from .failover import FailClosedDecision, FailoverStore, FallbackDecision, decision_source
from .modes import LeasedStore, NaiveStore, local_params
from .scripts import SUFFIXES
from .store import AsyncRedisStore, RedisStore

__all__ = ["SUFFIXES", "AsyncRedisStore", "FailClosedDecision", "FailoverStore", "FallbackDecision",
           "LeasedStore", "NaiveStore", "RedisConfigError", "RedisSettings", "RedisStore", "decision_source",
           "local_params", "open_store"]
