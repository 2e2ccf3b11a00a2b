"""Every store implements the one interface its callers use (targets.stores.protocol)."""

from __future__ import annotations

import inspect

import redis
import redis.asyncio as aredis

from harness.sim.cluster_store import ClusterStore
from targets.algorithms import Policy, build_params, get_algorithm
from targets.stores.memory import MemoryStore
from targets.stores.protocol import ReplayStore, SharedStore, Store
from targets.stores.redis import AsyncRedisStore, FailoverStore, LeasedStore, NaiveStore, RedisStore

URL = "redis://127.0.0.1:6379"  # clients connect lazily: nothing here talks to Redis
ALGORITHM = get_algorithm("fixed_window")
PARAMS = build_params("fixed_window", Policy(10, 1.0))


def test_memory_and_the_simulators_cluster_are_replay_stores():
    for store in (MemoryStore(ALGORITHM, PARAMS), ClusterStore(ALGORITHM, PARAMS, 3)):
        assert isinstance(store, ReplayStore) and isinstance(store, Store)


def test_the_sync_redis_store_is_a_store():
    store = RedisStore(redis.Redis.from_url(URL), ALGORITHM, PARAMS)
    assert isinstance(store, Store)
    assert not inspect.iscoroutinefunction(store.decide)  # isinstance checks names only: the kind is in the call


def test_every_redis_mode_and_the_failover_wrapper_are_shared_stores():
    remote = AsyncRedisStore(aredis.Redis.from_url(URL), ALGORITHM, PARAMS)
    stores = [remote, LeasedStore(remote), NaiveStore(aredis.Redis.from_url(URL), 10, 1.0),
              FailoverStore(remote, MemoryStore(ALGORITHM, PARAMS))]
    assert all(isinstance(s, SharedStore) for s in stores)
    assert all(inspect.iscoroutinefunction(s.decide) for s in stores)  # awaited by the layered check
    assert not inspect.iscoroutinefunction(MemoryStore(ALGORITHM, PARAMS).decide)


def test_a_class_without_release_is_no_store():
    class DecideOnly:
        algorithm, params = ALGORITHM, PARAMS

        def decide(self, key: str, now: float, cost: float = 1.0):
            raise AssertionError

    assert not isinstance(DecideOnly(), Store)
