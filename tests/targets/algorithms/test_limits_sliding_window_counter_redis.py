"""limits' sliding window counter on Redis (the slowapi-sliding-window-counter-redis peer's model)
on a hand-computed sequence: the counter pair opens at a key's first hit, shifts when the current
counter's TTL drops below W, and a refusal counts nothing. 3 per 1 s, in Redis's whole ms."""

from __future__ import annotations

import math

import pytest

from targets.algorithms import ALGORITHMS, PEER_MODELS, Policy, PolicyError, build_params, get_algorithm

NAME = "limits_sliding_window_counter_redis"


def test_the_counter_pair_is_anchored_to_the_first_hit():
    decide, params, state, out = get_algorithm(NAME).decide, build_params(NAME, Policy(3, 1)), None, []
    for now in (10.5, 10.6, 10.7, 10.8, 11.501, 11.6, 11.834, 14.0):
        decision, state = decide(state, now, 1.0, params)
        out.append((decision.allowed, round(decision.retry_after_s, 6)))
    assert out == [
        (True, 0), (True, 0), (True, 0),
        # current (created at 10.5, TTL 2 s) holds 3: refused, and not counted; after the shift at
        # 11.501 (TTL 999 ms < W) the estimate is floor(3 x 999 / 1000) = 2, + 1 <= 3
        (False, 0.701),
        (True, 0),
        # floor(3 x 900 / 1000) + 1 = 3, + 1 > 3; at 11.834 floor(3 x 666 / 1000) + 1 = 2: admitted
        (False, 0.234),
        (True, 0),
        (True, 0),  # both counters expired (current at 13.5): a new pair from this hit
    ]
    assert state == (1, 16000, 3, 12500)  # (current, its expiry ms, previous, its expiry ms)


def test_a_cost_above_the_limit_is_refused_before_anything():
    decide, params = get_algorithm(NAME).decide, build_params(NAME, Policy(3, 1))
    decision, state = decide((3, 12500, 0, -1), 11.6, 4.0, params)
    assert (decision.allowed, decision.retry_after_s) == (False, math.inf) and state == (3, 12500, 0, -1)


def test_a_peer_model_on_whole_ms():
    assert NAME in PEER_MODELS and NAME not in ALGORITHMS
    with pytest.raises(PolicyError, match="whole ms"):
        build_params(NAME, Policy(3, 0.0005))
