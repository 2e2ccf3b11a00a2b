"""Envoy's local rate limit bucket (the envoy peer's model) on hand-computed sequences, from
AtomicTokenBucketImpl::consume: full at start, refilled continuously, a refusal changes nothing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from targets.algorithms import ALGORITHMS, PEER_MODELS, Policy, PolicyError, build_params, get_algorithm
from targets.algorithms.envoy_local_ratelimit import Params

NAME = "envoy_local_ratelimit"
DECIDE = get_algorithm(NAME).decide


def _run(params: Params, steps: list[tuple[float, float]]) -> list[tuple]:
    state, out = None, []
    for now, cost in steps:
        d, state = DECIDE(state, now, cost, params)
        out.append((d.allowed, round(d.remaining, 9), round(d.retry_after_s, 9), round(d.reset_s, 9)))
    return out


def test_a_peer_model_never_a_suite_algorithm():
    assert NAME in PEER_MODELS and NAME not in ALGORITHMS


def test_starts_full_then_refills_continuously():
    # max_tokens 3, 1 per 1 s. time_in_seconds_ starts at 10 - 3 = 7 (full), moves to now - left / rate
    p = Params(3, 1, 1.0)
    assert _run(p, [(10.0, 1), (10.0, 1), (10.0, 1), (10.0, 1), (10.5, 1), (11.0, 1), (12.5, 1), (12.9, 1), (20.0, 1)]) == [
        (True, 2, 0, 1), (True, 1, 0, 2), (True, 0, 0, 3),
        (False, 0, 1, 3),  # now <= time_old (10): refused, nothing changes
        (False, 0.5, 0.5, 2.5),  # half a token accrued: still refused
        (True, 0, 0, 3),  # a whole token at 11.0: admitted
        (True, 0.5, 0, 2.5),  # 1.5 tokens after 1.5 s idle: the half is kept
        (False, 0.9, 0.1, 2.1),
        (True, 2, 0, 1),  # idle for 7.1 s: capped at max_tokens
    ]


def test_the_refill_is_not_a_timer():
    # 10 per 1 s: the timer bucket of Envoy < 1.31 gave 10 tokens at t + 1 s and none before;
    # the atomic bucket gives one every 100 ms
    p = Params(10, 10, 1.0)
    steps = [(100.0, 1)] * 10 + [(100.09, 1), (100.1, 1), (100.15, 1), (100.2, 1)]
    assert [a for a, *_ in _run(p, steps)] == [True] * 10 + [False, True, False, True]


def test_fill_interval_alone_does_not_matter():
    one = _run(Params(5, 1, 0.1), [(0.0, 1)] * 6 + [(0.35, 1)] * 4)
    ten = _run(Params(5, 10, 1.0), [(0.0, 1)] * 6 + [(0.35, 1)] * 4)
    assert one == ten and [a for a, *_ in one] == [True] * 5 + [False, True, True, True, False]


def test_a_cost_above_one_is_the_cluster_share():
    # local_cluster_rate_limit with 2 members: each request asks for 1 / 0.5 = 2 tokens
    p = Params(5, 1, 1.0)
    assert _run(p, [(0.0, 2), (0.0, 2), (0.0, 2), (1.0, 2)]) == [
        (True, 3, 0, 2), (True, 1, 0, 4), (False, 1, 1, 4), (True, 0, 0, 5)]


def test_from_policy_and_envoys_bounds():
    params = build_params(NAME, Policy(10, 1.0, 20))
    assert (params.max_tokens, params.tokens_per_fill, params.fill_interval_s, params.fill_rate) == (20, 10, 1.0, 10.0)
    with pytest.raises(PolicyError, match="50 ms"):
        Params(1, 1, 0.049)
    with pytest.raises(PolicyError, match="whole"):
        build_params(NAME, Policy(10, 1.0, 2.5))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 20), st.integers(1, 20), st.sampled_from([0.05, 0.1, 1.0, 60.0]),
       st.lists(st.floats(0, 5), min_size=1, max_size=200))
def test_never_more_than_max_tokens_plus_the_refill(max_tokens, per_fill, interval, gaps):
    p, state, t, admitted = Params(max_tokens, per_fill, interval), None, 0.0, []
    for gap in gaps:
        t += gap
        d, state = DECIDE(state, t, 1.0, p)
        if d.allowed:
            admitted.append(t)
    for i, start in enumerate(admitted):
        within = sum(1 for u in admitted[i:] if u - start <= 1.0)
        assert within <= max_tokens + p.fill_rate * 1.0 + 1e-9
