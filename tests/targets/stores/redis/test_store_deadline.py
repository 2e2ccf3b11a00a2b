"""The store's deadline against a Redis made slow or hung by a delaying proxy (harness/processes/
delay_proxy.py): inside its budget every decision is Redis's; past it, or hung without closing,
every one is the policy's fallback (fail-open) or refusal (fail-closed), counted as such."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from harness.processes.delay_proxy import STALL, DelayProxy
from harness.processes.redis_server import RedisServer
from targets.algorithms import ALGORITHMS
from targets.stores.memory import MemoryStore
from targets.stores.redis import AsyncRedisStore, FailoverStore, decision_source
from targets.stores.redis.connect import async_client

pytestmark = pytest.mark.process  # a redis-server and the proxy's process

FIXED = ALGORITHMS["fixed_window"]
BUDGET_S = 2.0
"""Far above a busy machine's stall (a reply at 5 ms never misses it), far below the slow delay
(5 s, or never): the outcome, not a timing, is asserted."""
SLOW_S = 5.0


@pytest.fixture(scope="module")
def server() -> Iterator[RedisServer]:
    with RedisServer() as own:
        yield own


def sources(server: RedisServer, delay_s: float | None, fail_open: bool = True, n: int = 20) -> list[str]:
    with DelayProxy(("127.0.0.1", server.port), delay_s) as proxy:
        host, port = proxy.address
        client = async_client(f"redis://{host}:{port}/0", timeout_s=BUDGET_S)
        primary = AsyncRedisStore(client, FIXED, FIXED.params_type(100.0, 3600.0))
        fallback = MemoryStore(FIXED, FIXED.params_type(3.0, 3600.0)) if fail_open else None
        store = FailoverStore(primary, fallback, timeout_s=BUDGET_S, retry_s=600.0)  # no probe within the test

        async def decide() -> list[str]:
            try:
                return [decision_source(await store.decide(f"deadline-{delay_s}-{fail_open}")) for _ in range(n)]
            finally:
                await client.aclose()

        return asyncio.run(decide())


def test_a_store_inside_its_budget_decides_every_request(server):
    assert sources(server, 0.005) == ["redis"] * 20


@pytest.mark.parametrize("delay_s", [SLOW_S, STALL], ids=["5s", "hung"])
def test_past_the_budget_or_hung_every_decision_is_the_policys_fallback(server, delay_s):
    assert sources(server, delay_s) == ["fallback"] * 20
    assert sources(server, delay_s, fail_open=False) == ["fail_closed"] * 20
