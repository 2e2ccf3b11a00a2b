"""The store behind one layer and tier, from the target's ``store`` config: the only place the
target meets the Redis store.

- ``memory``: a MemoryStore; decisions are synchronous and logged with source ``memory``.
- ``redis`` (``shared``, ``leased``, ``naive``): ``open_store`` (the Redis store's wiring point)
  returns an async store inside a FailoverStore; its decisions say their own source (``redis``,
  ``fallback``, ``fail_closed``). Keys go under ``<namespace>:<layer>:<tier>`` so that layers
  and tiers sharing one Redis never share state.
- ``redis`` in ``local`` mode, and algorithms without shared state (``none``, ``adaptive``:
  its limit follows this node's own latency): a MemoryStore, logged as ``local``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .algorithms import Algorithm, Policy, build_params
from .config import StoreConfig
from .stores.memory import MemoryStore
from .stores.protocol import SharedStore
from .stores.redis import SUFFIXES, RedisSettings, open_store
from .stores.redis.connect import check


@dataclass(frozen=True)
class LayerStore:
    store: MemoryStore | SharedStore
    remote: bool
    """True: ``await store.decide(key, None, cost)`` (Redis server time); else MemoryStore."""
    source: str | None
    """The decision log's ``source`` for every decision of a local store; None: per decision."""


def shares_state(store: StoreConfig, algorithm: str) -> bool:
    """Whether this layer's decisions go to Redis."""
    return store.name == "redis" and store.mode != "local" and algorithm in SUFFIXES


def open_layer_store(store: StoreConfig, layer: str, tier: str | None, algorithm: Algorithm, policy: Policy,
                     params: Any) -> LayerStore:
    if not shares_state(store, algorithm.name):
        if store.name == "redis" and store.mode == "local":
            local = open_store(algorithm, params, _settings(store, layer, tier, algorithm, policy), max_keys=store.max_keys)
            return LayerStore(local, False, "local")
        memory = MemoryStore(algorithm, params, max_keys=store.max_keys, idle_ttl_s=store.idle_ttl_s)
        return LayerStore(memory, False, "memory" if store.name == "memory" else "local")
    remote = open_store(algorithm, params, _settings(store, layer, tier, algorithm, policy), max_keys=store.max_keys)
    return LayerStore(remote, True, None)


def _settings(store: StoreConfig, layer: str, tier: str | None, algorithm: Algorithm, policy: Policy) -> RedisSettings:
    fallback = None
    if store.fallback is not None:
        fb = store.fallback
        fallback = build_params(algorithm.name, Policy(fb.limit, fb.window_s or policy.window_s, fb.burst))
    return RedisSettings(
        store.url or "", mode=store.mode, cluster=store.cluster, namespace=f"{store.namespace}:{layer}:{tier or 'default'}",
        nodes=store.nodes, split=store.split, batch=store.batch, lease_ttl_s=store.lease_ttl_s,
        timeout_s=store.timeout_s, retry_s=store.retry_s, fail_open=store.fail_open, fallback_params=fallback,
    )


def probe(store: StoreConfig) -> None:
    """At start, before any port opens: RedisConfigError unless the configured Redis is usable."""
    if store.name == "redis" and store.mode != "local":
        check(store.url or "", cluster=store.cluster)
