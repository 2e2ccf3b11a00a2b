"""The bounded memory store: eviction by what forgetting costs, idle TTL, thread safety."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from targets.algorithms import ALGORITHMS, Policy, build_params
from targets.stores.memory import SWEEP_EVERY, MemoryStore

TICK = 1 / 64  # with power-of-two rates, every float below is exact
policies = st.builds(Policy, limit=st.sampled_from([4, 8, 16]), window_s=st.sampled_from([0.5, 1.0, 2.0]))
RESTING = [name for name in ALGORITHMS if name not in ("adaptive", "none")]
"""adaptive's learned limit is never at rest; none keeps no state."""


def store(name="fixed_window", limit=10, window=1.0, **kw):
    return MemoryStore(ALGORITHMS[name], build_params(name, Policy(limit, window)), **kw)


def _debts():
    """Token bucket 10 per 10 s (1 token/s): three keys, rest at 10 s, 1 s and 5.5 s."""
    s = store(name="token_bucket", limit=10, window=10.0, max_keys=3)
    s.decide("debt", 0.0, 10)
    s.decide("light", 0.0, 1)
    s.decide("debt2", 0.5, 5)
    return s


def test_a_key_at_rest_goes_first_and_no_debt_is_forgiven():
    s = _debts()
    s.decide("new", 2.0)  # "light" is full again at 1 s; "debt", older, is in debt
    assert s.state("light") is None and {"debt", "debt2", "new"} == set(s._entries)
    assert s.evictions == 1 and s.forgiven == 0
    assert list(s._entries) == ["debt2", "new", "debt"]  # the sampled key in debt moved back
    assert not s.decide("debt", 2.0, 3).allowed  # 2 tokens refilled, 3 asked: still in debt


def test_with_every_key_in_debt_the_one_owing_least_goes():
    s = _debts()
    s.decide("new", 0.75)  # owing 9.25, 0.25, 5 and 1 tokens: "light" goes, 0.25 forgiven
    assert s.state("light") is None and s.evictions == 1 and s.forgiven == 0.25
    s.decide("newer", 0.875)  # debt 9.125, debt2 4.625, new 0.875
    assert s.state("new") is None and s.state("debt") is not None and s.state("debt2") is not None
    assert s.forgiven == 0.25 + 0.875


def test_window_keys_are_ranked_by_their_count_not_their_window_end():
    """Every key of a fixed window is at rest at the same instant; what forgetting one gives
    back is its count."""
    s = store(limit=10, window=60.0, max_keys=3)
    s.decide("heavy", 0.0, 9)
    s.decide("light", 1.0, 1)
    s.decide("middle", 2.0, 4)
    s.decide("new", 3.0, 2)
    assert s.state("light") is None and s.forgiven == 1
    s.decide("newer", 4.0, 3)
    assert s.state("new") is None and set(s._entries) == {"heavy", "middle", "newer"} and s.forgiven == 3


@pytest.mark.parametrize(("per_s", "forgiven"), [(1_000, False), (10_000, True)])
def test_a_key_in_debt_survives_a_flood_of_new_keys(per_s, forgiven):
    """Token bucket 100 per 60 s, 1,000 keys, 50,000 one-request keys (each at rest 0.6 s after
    its request) and a bursty key (150 requests every 5,000 new keys): the bursty key is decided
    exactly as unbounded. At 1,000 new keys/s the flood keys are at rest when evicted; at 10,000
    they are not (0.1 s in the table), so part of their own token is forgiven, never the bursty key's debt."""
    bounded, unbounded = (store(name="token_bucket", limit=100, window=60.0, max_keys=n) for n in (1000, 10**6))
    decided: dict[int, list[bool]] = {id(bounded): [], id(unbounded): []}
    for s in (bounded, unbounded):
        for i in range(50_000):
            t = i / per_s
            s.decide(f"flood-{i}", t)
            if i % 5_000 == 0:
                decided[id(s)] += [s.decide("bursty", t).allowed for _ in range(150)]
    assert decided[id(bounded)] == decided[id(unbounded)]
    assert 100 <= sum(decided[id(bounded)]) < 150 * 10 and len(bounded) == 1000
    assert bounded.evictions == 50_000 + 1 - 1000 and (bounded.forgiven > 0) == forgiven


def test_idle_keys_expire_after_the_state_lifetime():
    s = store(window=1.0)  # fixed window: state lives one window
    assert s.idle_ttl_s == 1.0
    s.decide("idle", 0.0)
    for i in range(SWEEP_EVERY):
        s.decide(f"busy{i % 3}", 1.0 + i / 1000)
    assert s.state("idle") is None
    assert len(s) == 3


def test_an_expired_key_starts_fresh_even_before_the_sweep():
    s = store(limit=1, window=1.0)
    assert s.decide("k", 0.0).allowed
    assert not s.decide("k", 0.5).allowed
    assert s.decide("k", 1.0).allowed


def test_key_rotation_attack_is_bounded():
    s = store(name="token_bucket", max_keys=1000)
    for i in range(200_000):
        s.decide(f"rotating-{i}", i * 1e-6)
    assert len(s) == 1000
    assert s.evictions == 199_000


def test_batch_decisions_equal_single_decisions():
    keys = [f"k{i % 7}" for i in range(500)]
    times = [i / 64 for i in range(500)]
    costs = [1 + i % 3 for i in range(500)]
    for name in ALGORITHMS:
        one, many = store(name, limit=8), store(name, limit=8)
        expected = [one.decide(k, t, c) for k, t, c in zip(keys, times, costs)]
        assert many.decide_many(keys, times, costs) == expected, name


@given(st.sampled_from(RESTING), policies, st.lists(st.tuples(st.sampled_from("abcdef"), st.sampled_from([0, 1, 16, 256]),
                                                            st.integers(1, 3), st.booleans()), min_size=SWEEP_EVERY + 1,
                                                  max_size=4 * SWEEP_EVERY),
       st.sampled_from([1, 3, 1_000]))
def test_batches_decide_as_one_by_one_with_evictions_and_expiry(name, policy, events, max_keys):
    """``decide_many`` writes ``decide``'s steps out again (a call per request cost a fifth of a
    replay): split anywhere, full tables evicting and idle keys swept (gaps of 4 s pass every
    state's TTL here; a sweep every SWEEP_EVERY decisions), the batches decide, evict and forget as the single calls do."""
    params = build_params(name, policy)
    one, many = (MemoryStore(ALGORITHMS[name], params, max_keys=max_keys) for _ in range(2))
    t, batch, expected, got = 0.0, ([], [], []), [], []
    for key, gap, cost, cut in events:
        t += gap * TICK
        expected.append(one.decide(key, t, cost))
        for column, value in zip(batch, (key, t, cost)):
            column.append(value)
        if cut:
            got += many.decide_many(*batch)
            batch = ([], [], [])
    got += many.decide_many(*batch)
    assert got == expected
    assert (many.evictions, many.forgiven, list(many._entries)) == (one.evictions, one.forgiven, list(one._entries))


def test_threads_never_over_admit():
    s = store(name="fixed_window", limit=1000, window=60.0)
    admitted = []

    def worker():
        n = sum(s.decide("shared", 1.0).allowed for _ in range(500))
        admitted.append(n)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(admitted) == 1000


def test_concurrency_release_frees_a_slot():
    s = MemoryStore(ALGORITHMS["concurrency"], build_params("concurrency", Policy(10, 1, burst=1)))
    assert s.decide("k", 0.0).allowed
    assert not s.decide("k", 0.0).allowed
    s.release("k", 0.1)
    assert s.decide("k", 0.1).allowed


keyed = st.lists(st.tuples(st.sampled_from("abcdef"), st.sampled_from([0, 1, 4, 16, 64])), min_size=1, max_size=300)


@given(st.sampled_from(RESTING), policies, keyed, st.integers(1, 4))
def test_the_bound_holds_and_forgetting_keys_at_rest_changes_no_decision(name, policy, events, max_keys):
    params = build_params(name, policy)
    bounded = MemoryStore(ALGORITHMS[name], params, max_keys=max_keys)
    unbounded = MemoryStore(ALGORITHMS[name], params)
    t, same = 0.0, True
    for key, gap in events:
        t += gap * TICK
        forgiven = bounded.forgiven
        d = bounded.decide(key, t)
        assert len(bounded) <= max_keys
        if forgiven == 0:  # nothing forgiven so far: the bounded store is exact
            same = same and d == unbounded.decide(key, t)
            assert same
        else:
            unbounded.decide(key, t)


@given(st.sampled_from(RESTING), policies, st.lists(st.tuples(st.sampled_from([0, 1, 8, 64]), st.integers(1, 3)),
                                                     min_size=1, max_size=100))
def test_a_state_without_debt_decides_as_a_fresh_key(name, policy, events):
    """What eviction relies on: once ``debt`` says 0, forgetting the key changes no decision."""
    s = MemoryStore(ALGORITHMS[name], build_params(name, policy))
    t = 0.0
    for gap, cost in events:
        t += gap * TICK
        s.decide("k", t, cost)
    state, decide, params = s.state("k"), s.algorithm.decide, s.params
    for step in range(int(4 * policy.window_s / TICK) + 1):
        now = t + step * TICK
        if s.debt(state, now) <= 0:
            for cost in (1.0, policy.limit):
                assert decide(state, now, cost, params)[0] == decide(None, now, cost, params)[0], (now, cost)
