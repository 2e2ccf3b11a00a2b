"""Atomicity: 8 processes hammering one key. Shared mode admits exactly the limit; local mode
(each process its own memory store) admits up to N x the limit."""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Iterator
from multiprocessing.pool import Pool
from typing import Any

import pytest
import redis

from harness.processes.redis_server import RedisServer
from targets.algorithms import ALGORITHMS, Policy
from targets.stores.memory import MemoryStore
from targets.stores.redis import RedisStore, local_params

NODES, LIMIT, PER_NODE = 8, 1000, 250  # 2,000 requests for a limit of 1,000


def _params(name: str) -> Any:
    return ALGORITHMS[name].params_from_policy(Policy(limit=LIMIT, window_s=1000.0))  # GCRA interval 1.0: no float drift


def run_shared(args: tuple[str, str, str]) -> int:
    url, name, namespace = args
    client = redis.Redis.from_url(url)
    store = RedisStore(client, ALGORITHMS[name], _params(name), namespace=namespace)
    try:
        return sum(store.decide("hot-key", 5000.0).allowed for _ in range(PER_NODE))
    finally:
        client.close()


def run_local(args: tuple[str, bool]) -> int:
    name, split = args
    params = local_params(_params(name), NODES) if split else _params(name)
    store = MemoryStore(ALGORITHMS[name], params)
    return sum(store.decide("hot-key", 5000.0).allowed for _ in range(PER_NODE))


@pytest.fixture(scope="module")
def pool() -> Iterator[Pool]:
    with mp.get_context("fork").Pool(NODES) as p:  # fork: the children build their own clients
        yield p


@pytest.mark.parametrize("name", ["fixed_window", "sliding_log", "sliding_window_counter", "token_bucket", "gcra"])
def test_shared_admits_exactly_the_limit(name: str, redis_server: RedisServer, namespace: str, pool: Pool) -> None:
    admitted = pool.map(run_shared, [(redis_server.url, name, namespace)] * NODES, chunksize=1)
    assert sum(admitted) == LIMIT, f"{name}: {NODES} nodes sharing one Redis admitted {sum(admitted)} for a limit of {LIMIT}"


def test_local_mode_admits_up_to_n_times_the_limit(pool: Pool) -> None:
    unscaled = sum(pool.map(run_local, [("fixed_window", False)] * NODES, chunksize=1))
    split = sum(pool.map(run_local, [("fixed_window", True)] * NODES, chunksize=1))
    assert LIMIT < unscaled <= NODES * LIMIT, (
        f"local mode with the unscaled limit admits up to N x L = {NODES} x {LIMIT}: here {unscaled} "
        f"(every request, {NODES} x {PER_NODE}), not the shared {LIMIT}")
    assert split == LIMIT, f"local mode with L/N each: {split} with an even spread over the nodes"
