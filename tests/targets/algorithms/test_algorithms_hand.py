"""Exact decisions on hand-computed sequences, one algorithm at a time."""

from __future__ import annotations

import math

import pytest

from targets.algorithms import (
    ALGORITHMS,
    Policy,
    PolicyError,
    build_params,
    concurrency,
    fixed_window,
    gcra,
    leaky_bucket,
    parse_param,
    sliding_log,
    sliding_window_counter,
    sliding_window_ring,
    token_bucket,
)


def run(module, params, events, state=None):
    """Feed (t, cost) events; return the decisions and the final state."""
    out = []
    for t, cost in events:
        d, state = module.decide(state, t, cost, params)
        out.append(d)
    return out, state


def test_sliding_window_counter_article_example():
    # previous window 100, current 20, 25% into the window: 100 * 0.75 + 20 = 95 -> 5 more
    p = sliding_window_counter.Params(limit=100, window_s=60)
    state = (1, 100.0, 20.0)  # window [60, 120)
    decisions, state = run(sliding_window_counter, p, [(75.0, 1)] * 6, state)
    assert [d.allowed for d in decisions] == [True] * 5 + [False]
    assert decisions[0].remaining == pytest.approx(4)
    assert decisions[4].remaining == pytest.approx(0)
    assert state == (1, 100.0, 25.0)
    # the 6th fits once prev * (1 - f) <= 100 - 25 - 1 = 74: f >= 0.26, t = 60 + 15.6 = 75.6
    assert decisions[5].retry_after_s == pytest.approx(0.6)
    d, _ = sliding_window_counter.decide(state, 75.0 + decisions[5].retry_after_s + 1e-9, 1, p)
    assert d.allowed


def test_token_bucket_capacity_20_refill_10():
    p = token_bucket.Params(capacity=20, rate=10)
    decisions, state = run(token_bucket, p, [(0.0, 1)] * 21)
    assert [d.allowed for d in decisions] == [True] * 20 + [False]
    rejected = decisions[-1]
    assert rejected.retry_after_s == pytest.approx((1 - 0) / 10)
    assert math.ceil(rejected.retry_after_s) == 1  # the Retry-After header's integer seconds
    assert rejected.remaining == 0
    assert rejected.reset_s == pytest.approx(2.0)  # 20 tokens at 10/s
    # then 10/s long-run: 20 requests/s for 10 s after the burst admit exactly 10 per second
    events = [(1 / 16 + i / 20, 1) for i in range(200)]
    decisions, _ = run(token_bucket, p, events, state)
    admitted = sum(d.allowed for d in decisions)
    assert admitted == pytest.approx(10 * 10, abs=1)


def test_token_bucket_rejection_consumes_nothing():
    p = token_bucket.Params(capacity=2, rate=1)
    decisions, _ = run(token_bucket, p, [(0.0, 1), (0.0, 1), (0.0, 1), (0.0, 1), (1.0, 1)])
    assert [d.allowed for d in decisions] == [True, True, False, False, True]


def test_gcra_hand_sequence_matches_token_bucket():
    # T = W / L = 1/8 s, burst 4; dyadic times keep every float exact
    p = gcra.Params(interval_s=0.125, burst=4)
    events = [(0.0, 1)] * 5 + [(0.125, 1), (0.125, 1)] + [(0.5, 1)] * 4
    decisions, _ = run(gcra, p, events)
    assert [d.allowed for d in decisions] == [True] * 4 + [False, True, False, True, True, True, False]
    assert decisions[4].retry_after_s == 0.125
    assert decisions[6].retry_after_s == 0.125
    tb, _ = run(token_bucket, token_bucket.Params(capacity=4, rate=8), events)
    assert [d.allowed for d in tb] == [d.allowed for d in decisions]


def test_leaky_bucket_meter_is_the_token_bucket_mirror():
    events = [(0.0, 1)] * 5 + [(0.125, 1), (0.125, 1)] + [(0.5, 1)] * 4
    decisions, _ = run(leaky_bucket, leaky_bucket.Params(capacity=4, rate=8), events)
    assert [d.allowed for d in decisions] == [True] * 4 + [False, True, False, True, True, True, False]
    assert decisions[4].retry_after_s == 0.125


def test_leaky_bucket_queue_mode_delays_then_rejects():
    # capacity 1, 4/s (one every 0.25 s), waits up to 0.5 s
    p = leaky_bucket.Params(capacity=1, rate=4, mode="queue", max_delay_s=0.5)
    decisions, _ = run(leaky_bucket, p, [(0.0, 1)] * 4)
    assert [(d.allowed, d.delay_s) for d in decisions[:3]] == [(True, 0.0), (True, 0.25), (True, 0.5)]
    assert not decisions[3].allowed
    assert decisions[3].retry_after_s == 0.25  # its delay would be 0.75, 0.25 over max_delay


def test_fixed_window_admits_2l_across_an_edge():
    p = fixed_window.Params(limit=3, window_s=10)
    decisions, _ = run(fixed_window, p, [(9.9, 1)] * 4 + [(10.0, 1)] * 4)
    assert [d.allowed for d in decisions] == [True] * 3 + [False] + [True] * 3 + [False]
    assert decisions[3].retry_after_s == pytest.approx(0.1)  # until second 10
    assert decisions[4].reset_s == 10.0


def test_sliding_log_exact_window_and_costs():
    p = sliding_log.Params(limit=3, window_s=10)
    decisions, state = run(sliding_log, p, [(0.0, 1), (1.0, 1), (2.0, 1), (5.0, 1)])
    assert [d.allowed for d in decisions] == [True, True, True, False]
    assert decisions[3].retry_after_s == 5.0  # the entry of t=0 leaves at t=10
    d, state = sliding_log.decide(state, 10.0, 1, p)  # (0, 10] no longer holds t=0
    assert d.allowed and d.remaining == 0
    d, _ = sliding_log.decide(state, 10.5, 2, p)  # cost 2 needs t=1 and t=2 gone: at 12
    assert not d.allowed and d.retry_after_s == 1.5
    d, _ = sliding_log.decide(state, 10.5, 4, p)
    assert not d.allowed and d.retry_after_s == math.inf  # never fits in 3


def test_sliding_window_ring_granularity():
    p = sliding_window_ring.Params(limit=4, window_s=1.0, buckets=4)  # sub-windows of 0.25 s
    decisions, state = run(sliding_window_ring, p, [(0.125, 2), (0.375, 2), (0.875, 1)])
    assert [d.allowed for d in decisions] == [True, True, False]
    assert decisions[2].retry_after_s == 0.125  # sub-window [0, 0.25) leaves the ring at 1.0
    d, _ = sliding_window_ring.decide(state, 1.0, 2, p)
    assert d.allowed and d.remaining == 0


def test_concurrency_acquire_release():
    p = concurrency.Params(max_in_flight=2)
    decisions, state = run(concurrency, p, [(0.0, 1)] * 3)
    assert [d.allowed for d in decisions] == [True, True, False]
    state = concurrency.release(state, 0.5, 1, p)
    d, state = concurrency.decide(state, 0.5, 1, p)
    assert d.allowed and d.remaining == 0


def test_none_admits_everything():
    p = build_params("none", Policy(1, 1))
    decisions, _ = run(ALGORITHMS["none"], p, [(0.0, 1)] * 1000)
    assert all(d.allowed for d in decisions)


def test_one_policy_maps_onto_every_algorithm():
    policy = Policy(limit=100, window_s=60, burst=8)
    assert build_params("token_bucket", policy) == token_bucket.Params(capacity=8, rate=100 / 60)
    assert build_params("gcra", policy) == gcra.Params(interval_s=0.6, burst=8)
    assert build_params("leaky_bucket", policy) == leaky_bucket.Params(capacity=8, rate=100 / 60)
    assert build_params("fixed_window", policy) == fixed_window.Params(100, 60)
    assert build_params("sliding_window_ring", policy, {"buckets": "20"}).buckets == 20
    assert build_params("token_bucket", Policy(100, 60)).capacity == 100  # burst defaults to L


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: Policy(0, 60), "limit must be a positive number"),
        (lambda: Policy(100, -1), "window_s must be a positive number"),
        (lambda: build_params("token_bucket", Policy(1, 1), {"nope": "1"}), "valid: capacity, rate"),
        (lambda: build_params("token_bucket", Policy(1, 1), {"rate": "fast"}), "expected a number"),
        (lambda: build_params("token_bucket", Policy(1, 1), {"rate": "-2"}), "rate must be a positive"),
        (lambda: build_params("leaky_bucket", Policy(1, 1), {"mode": "drop"}), "mode='drop': choose from: meter, queue"),
        (lambda: build_params("bogus", Policy(1, 1)), "choose from: fixed_window"),
        (lambda: parse_param("capacity"), "expected KEY=VALUE"),
    ],
)
def test_bad_policy_input_names_the_problem(call, message):
    with pytest.raises(PolicyError, match=message):
        call()
