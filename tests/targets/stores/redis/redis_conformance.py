"""Random traces replayed on the memory store and on a Redis store, decision for decision.

Times are dyadic (multiples of 1/64 s), costs 1..3, params small, so that traces cross window
edges, refills and expiries often. The memory store runs without idle expiry and the Redis
store with a long TTL: Redis expires keys in real server time, which an injected virtual time
does not move (expiry itself never changes a decision; test_redis_store checks the TTLs).
"""

from __future__ import annotations

import math
import uuid
from typing import Any

from hypothesis import strategies as st

from targets.algorithms import ALGORITHMS
from targets.stores.memory import MemoryStore
from targets.stores.redis import SUFFIXES, RedisStore

TICK = 1 / 64
windows = st.sampled_from([0.25, 0.3, 0.5, 1.0, 1.5, 3.0])
limits = st.integers(1, 6).map(float)

PARAMS: dict[str, st.SearchStrategy[Any]] = {
    "fixed_window": st.builds(ALGORITHMS["fixed_window"].params_type, limits, windows),
    "sliding_log": st.builds(ALGORITHMS["sliding_log"].params_type, limits, windows),
    "sliding_window_counter": st.builds(ALGORITHMS["sliding_window_counter"].params_type, limits, windows),
    "sliding_window_ring": st.builds(ALGORITHMS["sliding_window_ring"].params_type, limits, windows, st.integers(1, 5)),
    "token_bucket": st.builds(ALGORITHMS["token_bucket"].params_type, limits, st.sampled_from([0.5, 1.0, 3.0, 1 / 3]),
                              st.sampled_from([0.0, 0.0, 1.0, 2.5]), st.sampled_from([1.0, 3.0])),
    "leaky_bucket": st.builds(ALGORITHMS["leaky_bucket"].params_type, limits, st.sampled_from([0.5, 1.0, 3.0, 1 / 3]),
                              st.sampled_from(["meter", "queue"]), st.sampled_from([0.0, 0.5, 1.0])),
    "gcra": st.builds(ALGORITHMS["gcra"].params_type, st.sampled_from([0.25, 1 / 3, 0.5, 1.0]), limits),
    "concurrency": st.builds(ALGORITHMS["concurrency"].params_type, limits, st.sampled_from([0.1, 0.25])),
}
assert set(PARAMS) == set(SUFFIXES)

# (ticks since the previous request, cost, release instead of decide: concurrency only)
steps = st.lists(st.tuples(st.integers(0, 40), st.integers(1, 3), st.booleans()), min_size=1, max_size=25)


def close(a: float, b: float) -> bool:
    return a == b or (math.isfinite(a) and math.isfinite(b) and abs(a - b) <= 1e-9)


def replay(client: Any, name: str, params: Any, trace: list[tuple[int, int, bool]], namespace: str) -> None:
    algorithm = ALGORITHMS[name]
    memory = MemoryStore(algorithm, params, idle_ttl_s=math.inf)
    store = RedisStore(client, algorithm, params, namespace=namespace, ttl_s=3600)
    key = uuid.uuid4().hex
    now = 1000.0
    for i, (ticks, cost, release) in enumerate(trace):
        now += ticks * TICK
        if release and algorithm.release is not None:
            memory.release(key, now, cost)
            store.release(key, now, cost)
            continue
        expected, got = memory.decide(key, now, cost), store.decide(key, now, cost)
        assert expected.allowed == got.allowed and all(map(close, expected[1:], got[1:])), (
            f"{name} {params} step {i} at t={now} cost={cost}: memory {expected} != redis {got}")
