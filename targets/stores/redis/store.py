"""Shared mode: every decision is one atomic script call (EVALSHA, one round trip).

``RedisStore`` (sync: tests, harness, benchmark) and ``AsyncRedisStore`` (redis.asyncio with
hiredis: the targets) take a ready client, standalone or cluster: redis-py's ``Script`` sends
EVALSHA and reloads the script on NOSCRIPT (a restarted or failed-over server), and the cluster
client routes the call by the hash-tagged key's slot. ``now=None`` uses the Redis server's clock
(one clock for all nodes, so their skew does not matter); tests inject ``now``. An injected
``now`` does not move Redis's own TTL clock: keys still expire in real server time.
"""

from __future__ import annotations

from typing import Any

from ...algorithms.base import Algorithm, Decision
from .scripts import Codec, parse, release_source


class _Base:
    def __init__(self, client: Any, algorithm: Algorithm, params: Any, namespace: str, ttl_s: float | None) -> None:
        self.client = client
        self.algorithm, self.params = algorithm, params
        self.codec = Codec(algorithm, params, namespace, ttl_s)
        self._script = client.register_script(self.codec.source)
        self._release = client.register_script(release_source()) if algorithm.release else None
        self.calls = 0
        """Round trips made (one per decide, lease or release)."""


class RedisStore(_Base):
    def __init__(self, client: Any, algorithm: Algorithm, params: Any, *, namespace: str = "rl",
                 ttl_s: float | None = None) -> None:
        super().__init__(client, algorithm, params, namespace, ttl_s)

    def decide(self, key: str, now: float | None = None, cost: float = 1.0) -> Decision:
        return self.lease(key, now, cost)[0]

    def lease(self, key: str, now: float | None = None, cost: float = 1.0, want: float | None = None) -> tuple[Decision, float]:
        """A decision for ``cost`` that, when ``want`` > cost, takes the largest whole amount up
        to ``want`` that fits; returns the decision and the amount taken."""
        self.calls += 1
        c = self.codec
        return parse(self._script(c.keys(key), c.args(now, cost, want)))

    def release(self, key: str, now: float | None = None, cost: float = 1.0) -> None:
        """Concurrency: give back ``cost`` slots (``now`` is unused; kept for MemoryStore's signature)."""
        if self._release is not None:
            self.calls += 1
            self._release(self.codec.keys(key), [repr(float(cost))])


class AsyncRedisStore(_Base):
    def __init__(self, client: Any, algorithm: Algorithm, params: Any, *, namespace: str = "rl",
                 ttl_s: float | None = None) -> None:
        super().__init__(client, algorithm, params, namespace, ttl_s)

    async def decide(self, key: str, now: float | None = None, cost: float = 1.0) -> Decision:
        return (await self.lease(key, now, cost))[0]

    async def lease(self, key: str, now: float | None = None, cost: float = 1.0,
                    want: float | None = None) -> tuple[Decision, float]:
        self.calls += 1
        c = self.codec
        return parse(await self._script(c.keys(key), c.args(now, cost, want)))

    async def release(self, key: str, now: float | None = None, cost: float = 1.0) -> None:
        if self._release is not None:
            self.calls += 1
            await self._release(self.codec.keys(key), [repr(float(cost))])
