"""Properties over random traces (hypothesis). Times are multiples of 1/64 s and rates powers of
two, so every float involved is exact and equivalences can be asserted decision by decision."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.metrics import max_window_cost
from targets.algorithms import ALGORITHMS, Policy, build_params
from targets.stores.memory import MemoryStore

TICK = 1 / 64


@st.composite
def traces(draw, max_cost: int = 3, max_len: int = 200):
    """Sorted (t, cost) events: bursts (gap 0) mixed with gaps up to 2 s."""
    # exact multiples of the emission intervals make boundary cases (equality) frequent
    gap = st.one_of(st.just(0), st.sampled_from([2, 4, 8, 16, 32, 64]), st.integers(0, 128))
    gaps = draw(st.lists(gap, min_size=1, max_size=max_len))
    costs = draw(st.lists(st.integers(1, max_cost), min_size=len(gaps), max_size=len(gaps)))
    times = np.cumsum(gaps) * TICK
    return [(float(t), float(c)) for t, c in zip(times, costs)]


policies = st.builds(
    Policy,
    limit=st.sampled_from([4, 8, 16]),
    window_s=st.sampled_from([0.5, 1.0, 2.0]),
    burst=st.sampled_from([None, 4, 8]),
)


def replay(name, policy, trace, overrides=None):
    algorithm = ALGORITHMS[name]
    params = build_params(name, policy, overrides)
    state, out = None, []
    for t, cost in trace:
        d, state = algorithm.decide(state, t, cost, params)
        out.append(d)
    return out


def admitted_max(trace, decisions, window):
    t = np.array([e[0] for e, d in zip(trace, decisions) if d.allowed])
    c = np.array([e[1] for e, d in zip(trace, decisions) if d.allowed])
    return max_window_cost(t, c, window)


@given(policies, traces())
def test_sliding_log_never_exceeds_l_in_any_window(policy, trace):
    decisions = replay("sliding_log", policy, trace)
    assert admitted_max(trace, decisions, policy.window_s) <= policy.limit


@given(policies, traces())
def test_fixed_window_never_exceeds_2l(policy, trace):
    decisions = replay("fixed_window", policy, trace)
    assert admitted_max(trace, decisions, policy.window_s) <= 2 * policy.limit


@given(policies, traces())
def test_buckets_never_exceed_burst_plus_rate_times_window(policy, trace):
    bound = policy.effective_burst + policy.rate * policy.window_s
    for name in ("token_bucket", "gcra", "leaky_bucket"):
        decisions = replay(name, policy, trace)
        assert admitted_max(trace, decisions, policy.window_s) <= bound + 1e-9, name


@given(policies, traces(), st.sampled_from([2, 4, 8]))
def test_ring_never_exceeds_l_inside_w_minus_one_bucket(policy, trace, buckets):
    decisions = replay("sliding_window_ring", policy, trace, {"buckets": str(buckets)})
    shortest = policy.window_s - policy.window_s / buckets
    if shortest > 0:
        assert admitted_max(trace, decisions, shortest) <= policy.limit
    assert admitted_max(trace, decisions, policy.window_s) <= 2 * policy.limit


@given(policies, traces())
def test_gcra_and_leaky_meter_decide_exactly_as_token_bucket(policy, trace):
    reference = [d.allowed for d in replay("token_bucket", policy, trace)]
    assert [d.allowed for d in replay("gcra", policy, trace)] == reference
    assert [d.allowed for d in replay("leaky_bucket", policy, trace)] == reference


@given(policies, traces(), st.sampled_from(sorted(set(ALGORITHMS) - {"none"})))
def test_remaining_never_negative_and_rejections_say_when(policy, trace, name):
    for d in replay(name, policy, trace):
        assert d.remaining >= 0
        assert d.reset_s >= 0
        assert (d.retry_after_s == 0) == d.allowed or math.isinf(d.retry_after_s)


DETERMINISTIC = ["fixed_window", "sliding_log", "sliding_window_counter", "sliding_window_ring",
                 "token_bucket", "leaky_bucket", "gcra"]


@given(policies, traces(), st.sampled_from(DETERMINISTIC))
def test_waiting_retry_after_is_enough(policy, trace, name):
    """The header tells the truth: after a rejection, the same request at now + retry_after is
    admitted (nothing else arrives in between)."""
    algorithm = ALGORITHMS[name]
    params = build_params(name, policy)
    state = None
    for t, cost in trace:
        d, new_state = algorithm.decide(state, t, cost, params)
        if not d.allowed and math.isfinite(d.retry_after_s):
            retry, _ = algorithm.decide(state, t + d.retry_after_s + 1e-9, cost, params)
            assert retry.allowed, (t, cost, d)
        state = new_state


@given(policies, traces(), st.sampled_from(sorted(ALGORITHMS)))
def test_rejection_consumes_nothing(policy, trace, name):
    """Replaying only the admitted requests gives the same decisions on them."""
    decisions = replay(name, policy, trace)
    admitted = [e for e, d in zip(trace, decisions) if d.allowed]
    if name == "concurrency":
        return  # nothing is ever released here, so this is about in-flight slots, not quota
    assert all(d.allowed for d in replay(name, policy, admitted))


@settings(max_examples=50)
@given(st.lists(st.integers(0, 50), min_size=1, max_size=400), st.integers(1, 20))
def test_memory_store_never_holds_more_than_max_keys(keys, max_keys):
    store = MemoryStore(ALGORITHMS["token_bucket"], build_params("token_bucket", Policy(10, 1)),
                        max_keys=max_keys)
    for i, k in enumerate(keys):
        store.decide(f"k{k}", i * TICK, 1)
        assert len(store) <= max_keys


@given(policies, st.lists(st.tuples(st.integers(0, 64), st.integers(0, 4)), min_size=1, max_size=300),
       st.sampled_from(sorted(set(ALGORITHMS) - {"none"})))
def test_ttl_expiry_never_changes_a_decision(policy, events, name):
    """The default idle TTL is the state's lifetime: a bounded store decides exactly as an
    unbounded dict of states."""
    algorithm = ALGORITHMS[name]
    params = build_params(name, policy)
    store = MemoryStore(algorithm, params)
    states: dict[str, object] = {}
    t = 0.0
    for gap, k in events:
        t += gap * TICK
        key = f"k{k}"
        expected, states[key] = algorithm.decide(states.get(key), t, 1, params)
        assert store.decide(key, t, 1) == expected


@given(st.lists(st.tuples(st.integers(0, 200), st.integers(1, 5)), min_size=1, max_size=60),
       st.integers(1, 100))
def test_max_window_cost_matches_brute_force(events, window_ticks):
    order = np.argsort([e[0] for e in events], kind="stable")
    t = np.array([events[i][0] for i in order], dtype=float)
    c = np.array([events[i][1] for i in order], dtype=float)
    brute = max(c[(t >= s) & (t < s + window_ticks)].sum() for s in t)
    assert max_window_cost(t, c, window_ticks) == brute


@given(policies, traces(), st.lists(st.booleans(), min_size=200, max_size=200), st.sampled_from([1, 64]))
def test_sliding_log_states_are_values(policy, trace, peeks, compact_min):
    """The sliding log appends in place to buffers its states share; a decision taken from a
    state and then dropped (a layered peek that is not committed) must not change any later
    decision, whether or not the expired prefix is compacted away."""
    from targets.algorithms import sliding_log

    saved, sliding_log.COMPACT_MIN = sliding_log.COMPACT_MIN, compact_min
    try:
        params = build_params("sliding_log", policy)
        state, out = None, []
        for (t, cost), peek in zip(trace, peeks):
            if peek:
                sliding_log.decide(state, t, cost, params)  # dropped
            d, state = sliding_log.decide(state, t, cost, params)
            out.append(d)
    finally:
        sliding_log.COMPACT_MIN = saved
    assert out == replay("sliding_log", policy, trace)
    assert admitted_max(trace, out, policy.window_s) <= policy.limit
