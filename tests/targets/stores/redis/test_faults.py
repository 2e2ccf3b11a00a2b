"""Failure behaviour against servers of our own: stopped, restarted on the same port, paused."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator

import pytest
import redis

from harness.processes.redis_server import RedisServer
from targets.algorithms import ALGORITHMS
from targets.stores.memory import MemoryStore
from targets.stores.redis import AsyncRedisStore, FailoverStore, decision_source
from targets.stores.redis.connect import async_client

pytestmark = pytest.mark.process  # every test here starts processes

FIXED = ALGORITHMS["fixed_window"]


@pytest.fixture
def own_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


TIMEOUT_S = 2.0
"""The Redis budget of these stores: a busy machine's stall is no outage; a pause of PAUSE_MS is."""
PAUSE_MS = 5000


def failover(server: RedisServer, *, fail_open: bool = True) -> FailoverStore:
    primary = AsyncRedisStore(async_client(server.url, timeout_s=TIMEOUT_S), FIXED, FIXED.params_type(100.0, 3600.0))
    fallback = MemoryStore(FIXED, FIXED.params_type(3.0, 3600.0)) if fail_open else None
    return FailoverStore(primary, fallback, timeout_s=TIMEOUT_S, retry_s=0.05)


async def until_redis_answers(store: FailoverStore, key: str) -> str:
    """Decide until a probe reaches Redis again (bounded by a count of tries, not by a time)."""
    for _ in range(500):
        source = decision_source(await store.decide(key))
        if source == "redis":
            return source
        await asyncio.sleep(0.02)
    return source


def test_stopped_redis_falls_back_then_recovers(own_server: RedisServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="targets.stores.redis")

    async def run() -> None:
        store = failover(own_server)
        await store.primary.decide("warm")  # connect and load the script outside the budget
        assert decision_source(await store.decide("k")) == "redis"
        own_server.stop()
        during = [await store.decide("k") for _ in range(6)]
        assert {decision_source(d) for d in during} == {"fallback"}
        assert [d.allowed for d in during] == [True] * 3 + [False] * 3  # the fallback limit: 3
        assert store.down and store.outages == 1 and store.degraded_decisions == 6 and store.errors >= 1
        own_server.start()  # same port, same store object: no restart of the target
        assert await until_redis_answers(store, "k") == "redis"
        assert not store.down and store.outages == 1
        assert store.metrics()["redis_down"] == 0.0

    asyncio.run(run())
    lines = [r.getMessage() for r in caplog.records if r.name == "targets.stores.redis"]
    assert len(lines) == 2, lines  # one line at the start, one at the end; none per request
    assert "outage started" in lines[0] and "outage ended" in lines[1]


def test_slow_redis_times_out_to_the_fallback(own_server: RedisServer) -> None:
    async def run() -> None:
        store = failover(own_server)
        await store.primary.decide("warm")  # connect and load the script outside the budget
        assert decision_source(await store.decide("k")) == "redis"
        pauser = redis.Redis.from_url(own_server.url)
        pauser.execute_command("CLIENT", "PAUSE", str(PAUSE_MS), "ALL")  # Redis answers nothing for 5 s
        pauser.close()
        assert decision_source(await store.decide("k")) == "fallback"  # after timeout_s, not PAUSE_MS
        assert store.outages == 1
        assert await until_redis_answers(store, "k") == "redis"

    asyncio.run(run())


def test_fail_closed_rejects_during_an_outage(own_server: RedisServer) -> None:
    async def run() -> None:
        store = failover(own_server, fail_open=False)
        own_server.stop()
        decision = await store.decide("k")
        assert decision_source(decision) == "fail_closed" and not decision.allowed
        assert decision.retry_after_s == store.retry_s and store.degraded_decisions == 1

    asyncio.run(run())
