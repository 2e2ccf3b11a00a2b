"""Leased and naive modes, and the factory the target calls."""

from __future__ import annotations

import asyncio
import time

import pytest
import redis
import redis.asyncio

from harness.processes.redis_server import RedisServer
from targets.algorithms import ALGORITHMS
from targets.stores.memory import MemoryStore
from targets.stores.redis import (
    AsyncRedisStore,
    FailoverStore,
    LeasedStore,
    NaiveStore,
    RedisConfigError,
    RedisSettings,
    RedisStore,
    decision_source,
    local_params,
    open_store,
)

FIXED = ALGORITHMS["fixed_window"]


def test_leased_mode_needs_about_one_round_trip_per_batch(redis_server: RedisServer, namespace: str) -> None:
    async def run() -> tuple[int, int]:
        client = redis.asyncio.Redis.from_url(redis_server.url)
        bucket = ALGORITHMS["token_bucket"]
        store = LeasedStore(AsyncRedisStore(client, bucket, bucket.params_type(1e6, 1e3), namespace=namespace), batch=100)

        async def worker() -> int:
            return sum([(await store.decide("k")).allowed for _ in range(50)])

        admitted = sum(await asyncio.gather(*(worker() for _ in range(64))))  # 64 concurrent clients
        await client.aclose()
        return admitted, store.calls

    admitted, calls = asyncio.run(run())
    assert admitted == 3200
    assert calls * 10 <= admitted, f"{calls} round trips for {admitted} decisions"


def test_leases_never_exceed_the_shared_limit(redis_server: RedisServer, namespace: str) -> None:
    async def run() -> tuple[int, int]:
        client = redis.asyncio.Redis.from_url(redis_server.url)
        nodes = [LeasedStore(AsyncRedisStore(client, FIXED, FIXED.params_type(250.0, 60.0), namespace=namespace), batch=100)
                 for _ in range(2)]
        admitted = 0
        for _ in range(200):
            for node in nodes:
                admitted += (await node.decide("k", now=30.0)).allowed
        await client.aclose()
        return admitted, sum(n.calls for n in nodes)

    admitted, calls = asyncio.run(run())
    assert admitted == 250  # 100 + 100 + 50: the last lease is partial
    assert calls <= 6  # 3 leases, then one rejection per node remembered until the window ends


def test_naive_crash_between_incr_and_expire_locks_the_client_out(redis_server: RedisServer, namespace: str) -> None:
    class NodeCrashed(Exception):
        pass

    def crash() -> None:
        raise NodeCrashed

    async def run() -> tuple[int, list[bool]]:
        client = redis.asyncio.Redis.from_url(redis_server.url)
        dying = NaiveStore(client, 1, 1.0, namespace=namespace, crash_hook=crash)
        with pytest.raises(NodeCrashed):
            await dying.decide("victim")  # INCR done, EXPIRE never sent
        other = NaiveStore(client, 1, 1.0, namespace=namespace)
        ttl = await client.ttl(other.key("victim"))
        await asyncio.sleep(1.2)  # longer than the 1 s window
        later = [(await other.decide("victim")).allowed for _ in range(3)]
        await client.aclose()
        return ttl, later

    ttl, later = asyncio.run(run())
    assert ttl == -1, "the counter was left without a TTL"
    assert later == [False] * 3, "the client stays locked out after the window: the counter never expires"


def test_lua_window_cannot_lose_its_ttl(client: redis.Redis, namespace: str) -> None:
    store = RedisStore(client, FIXED, FIXED.params_type(1.0, 1.0), namespace=namespace)
    assert store.decide("victim").allowed
    assert 0 < client.pttl(store.codec.keys("victim")[0]) <= 1000  # state and TTL in one SET ... PX
    time.sleep(1.1)
    assert store.decide("victim").allowed  # a new window, whatever happened to the node


def test_local_params_split_the_limit() -> None:
    assert local_params(FIXED.params_type(1000.0, 60.0), 8) == FIXED.params_type(125.0, 60.0)
    gcra = ALGORITHMS["gcra"].params_type(0.5, 16.0)
    assert local_params(gcra, 4) == ALGORITHMS["gcra"].params_type(2.0, 4.0)


def test_open_store(redis_server: RedisServer, namespace: str) -> None:
    params = FIXED.params_type(2.0, 60.0)
    assert isinstance(open_store(FIXED, params, RedisSettings(url="unused", mode="local")), MemoryStore)
    with pytest.raises(RedisConfigError, match="naive is a fixed window"):
        open_store(ALGORITHMS["gcra"], ALGORITHMS["gcra"].params_type(1.0, 1.0), RedisSettings(redis_server.url, mode="naive"))
    with pytest.raises(RedisConfigError, match="mode must be one of"):
        RedisSettings(redis_server.url, mode="sharded")

    async def run() -> list[str]:
        # a generous timeout: this checks the wiring, not the 50 ms budget (a first call connects)
        store = open_store(FIXED, params, RedisSettings(redis_server.url, namespace=namespace, timeout_s=1.0))
        assert isinstance(store, FailoverStore)
        sources = [decision_source(await store.decide("k")) for _ in range(3)]
        await store.aclose()
        return sources

    assert asyncio.run(run()) == ["redis"] * 3
