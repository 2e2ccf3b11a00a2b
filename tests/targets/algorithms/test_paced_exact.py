"""On-time requests are admitted: a client paced exactly one emission interval apart on a decimal
clock is admitted every time, by the pure transitions and the memory store, and one tick early
it is not (time is whole µs: targets/algorithms/base.py). The Redis twin: tests/targets/stores/redis."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from targets.algorithms import ALGORITHMS, Policy, build_params
from targets.stores.memory import MemoryStore
from tests.targets.algorithms.paced_traces import PACED_ALGORITHMS, RATE_ALGORITHMS, Paced, paced, policy_for


def decisions(name: str, policy: Policy, times: list[float], overrides: dict[str, str] | None = None) -> list[bool]:
    """Allowed flags from a MemoryStore (the pure transition behind it) for one key."""
    store = MemoryStore(ALGORITHMS[name], build_params(name, policy, overrides))
    return [store.decide("k", t, 1.0).allowed for t in times]


def test_the_issue_example_every_request_paced_at_0_6_s_is_admitted():
    """Burst 1, 100 per 60 s, requests every 0.6 s on decimal timestamps: more than half were
    rejected by a float residue of ~1e-17 s before time became whole µs."""
    times = [float(f"{0.6 * k:.1f}") for k in range(1000)]
    for name in RATE_ALGORITHMS:
        assert all(decisions(name, Policy(100, 60, 1), times)), name


@settings(max_examples=150)
@given(paced(), st.sampled_from(PACED_ALGORITHMS), st.integers(1, 40))
def test_a_paced_client_is_admitted_in_full(pace: Paced, name: str, n: int):
    policy, times = policy_for(name, pace), pace.times(n, burst=name in RATE_ALGORITHMS)
    assert all(decisions(name, policy, times)), (policy, times)


@settings(max_examples=150)
@given(paced(), st.sampled_from([*RATE_ALGORITHMS, "leaky_bucket:queue"]), st.data())
def test_one_tick_early_is_rejected(pace: Paced, name: str, data):
    """After the burst, the k-th paced request one tick early is the first rejection."""
    name, _, mode = name.partition(":")
    overrides = {"mode": mode} if mode else None
    n = data.draw(st.integers(1, 30))
    early = data.draw(st.integers(0, n - 1))
    got = decisions(name, pace.policy, pace.times(n, early), overrides)
    assert got == [True] * (pace.burst + early) + [False] + got[pace.burst + early + 1:], (pace, got)


@settings(max_examples=100)
@given(paced(), st.sampled_from(["fixed_window", "sliding_log", "sliding_window_ring"]))
def test_a_window_edge_is_exact(pace: Paced, name: str):
    """L requests at a window (or sub-window) start fill it; the next request is admitted
    exactly at the edge where that quota comes back and rejected one tick before it."""
    policy = policy_for(name, pace)
    window_ticks = round(policy.window_s / float(pace.tick))
    start = -(-pace.start // window_ticks) * window_ticks  # aligned, so fixed windows start there
    pace = Paced(pace.tick, window_ticks, pace.limit, int(policy.limit), start)
    full = [pace.at(0)] * int(policy.limit)
    assert decisions(name, policy, [*full, pace.at(window_ticks - 1), pace.at(window_ticks)]) == [True] * len(full) + [False, True]


def test_sliding_window_counter_weighs_the_previous_window_exactly():
    """10 in window 0 of 1 s; at 1.3 s the previous window weighs exactly 7 (10 * (1 - 0.3)
    is 7.000000000000001 in float seconds), so 3 more fit and a 4th does not."""
    store = MemoryStore(ALGORITHMS["sliding_window_counter"], build_params("sliding_window_counter", Policy(10, 1)))
    assert all(store.decide("k", 0.0, 1.0).allowed for _ in range(10))
    assert [store.decide("k", 1.3, 1.0).allowed for _ in range(4)] == [True, True, True, False]
    assert not store.decide("k", 1.399999, 1.0).allowed
    assert store.decide("k", 1.4, 1.0).allowed
