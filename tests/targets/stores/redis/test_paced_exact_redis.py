"""On-time requests are admitted by the Lua scripts too, decision for decision with the memory
store: a client paced exactly one emission interval apart on a decimal clock is admitted in
full and one tick early it is not (the memory side: tests/targets/algorithms/test_paced_exact.py)."""

from __future__ import annotations

import math
import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from targets.algorithms import ALGORITHMS, Policy, build_params
from targets.stores.memory import MemoryStore
from targets.stores.redis import RedisStore
from tests.targets.algorithms.paced_traces import PACED_ALGORITHMS, RATE_ALGORITHMS, Paced, paced, policy_for

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def both(client, namespace: str, name: str, policy: Policy, times: list[float]) -> list[bool]:
    """Allowed flags from Redis, asserted equal to the memory store's, one key."""
    algorithm, params = ALGORITHMS[name], build_params(name, policy)
    memory = MemoryStore(algorithm, params, idle_ttl_s=math.inf)
    store = RedisStore(client, algorithm, params, namespace=namespace, ttl_s=3600)
    key, got = uuid.uuid4().hex, []
    for t in times:
        expected, decision = memory.decide(key, t, 1.0), store.decide(key, t, 1.0)
        assert decision.allowed == expected.allowed, (name, policy, t, expected, decision)
        got.append(decision.allowed)
    return got


def test_a_paced_client_is_admitted_in_full(client, namespace: str) -> None:
    @SETTINGS
    @given(paced(), st.sampled_from(PACED_ALGORITHMS), st.integers(1, 25))
    def check(pace: Paced, name: str, n: int) -> None:
        assert all(both(client, namespace, name, policy_for(name, pace), pace.times(n, burst=name in RATE_ALGORITHMS)))

    check()


def test_one_tick_early_is_rejected(client, namespace: str) -> None:
    @SETTINGS
    @given(paced(), st.sampled_from(RATE_ALGORITHMS), st.data())
    def check(pace: Paced, name: str, data) -> None:
        n = data.draw(st.integers(1, 20))
        early = data.draw(st.integers(0, n - 1))
        got = both(client, namespace, name, pace.policy, pace.times(n, early))
        assert got[:pace.burst + early + 1] == [True] * (pace.burst + early) + [False]

    check()


def test_the_issue_example_from_an_epoch_sized_start(client, namespace: str) -> None:
    """Burst 1, 100 per 60 s, paced at 0.6 s from an epoch-sized decimal start."""
    times = [float(f"{1_764_581_234.567 + 0.6 * k:.3f}") for k in range(200)]
    for name in RATE_ALGORITHMS:
        assert all(both(client, namespace, name, Policy(100, 60, 1), times)), name
