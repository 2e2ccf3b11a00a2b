"""One call that builds a target's store from its Redis settings: the wiring point.

``open_store`` checks the URL first (``RedisConfigError`` on a bad one), then returns an async
store with ``decide(key, now=None, cost=1.0)`` and ``release(key, now=None, cost=1.0)``: the mode's
store inside a ``FailoverStore`` (whose counters feed /metrics), or a plain MemoryStore for
``local`` (no Redis at all, so nothing to fail over).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contract.stores import REDIS_MODES, RedisMode

from ...algorithms.base import Algorithm
from ..memory import MemoryStore
from ..protocol import SharedStore
from .connect import async_client, check
from .errors import RedisConfigError
from .failover import FailoverStore
from .modes import LeasedStore, NaiveStore, local_params
from .store import AsyncRedisStore


@dataclass(frozen=True)
class RedisSettings:
    url: str
    mode: RedisMode = "shared"
    cluster: bool = False
    namespace: str = "rl"
    """Prefix of every key; give each layer/tier its own when they share a Redis."""
    nodes: int = 1
    """N target nodes sharing the limit: ``local`` with ``split`` and the fallback use L/N."""
    split: bool = False
    batch: int = 100
    lease_ttl_s: float = 1.0
    timeout_s: float = 0.05
    retry_s: float = 1.0
    fail_open: bool = True
    fallback_params: Any = None
    """Params of the local fallback limit; None = the shared params split over ``nodes``."""

    def __post_init__(self) -> None:
        if self.mode not in REDIS_MODES:
            raise RedisConfigError(f"redis mode must be one of {', '.join(REDIS_MODES)}, got {self.mode!r}")


def open_store(algorithm: Algorithm, params: Any, settings: RedisSettings, *, max_keys: int = 100_000) -> MemoryStore | SharedStore:
    if settings.mode == "local":
        return MemoryStore(algorithm, local_params(params, settings.nodes) if settings.split else params, max_keys=max_keys)
    check(settings.url, cluster=settings.cluster)
    client = async_client(settings.url, cluster=settings.cluster, timeout_s=settings.timeout_s)
    primary: Any
    if settings.mode == "naive":
        if algorithm.name != "fixed_window":
            raise RedisConfigError(f"redis mode naive is a fixed window (INCR then EXPIRE); it cannot run {algorithm.name}")
        primary = NaiveStore(client, params.limit, params.window_s, namespace=settings.namespace + ":naive")
    else:
        primary = AsyncRedisStore(client, algorithm, params, namespace=settings.namespace)
        if settings.mode == "leased":
            primary = LeasedStore(primary, batch=settings.batch, lease_ttl_s=settings.lease_ttl_s)
    fallback = None
    if settings.fail_open:
        fallback_params = settings.fallback_params or local_params(params, settings.nodes)
        fallback = MemoryStore(algorithm, fallback_params, max_keys=max_keys)
    return FailoverStore(primary, fallback, timeout_s=settings.timeout_s, retry_s=settings.retry_s)
