"""The adaptive limiter's pure transitions, with sequences computed by hand."""

from __future__ import annotations

import math

import pytest

from targets.algorithms import ALGORITHMS, Policy, PolicyError, build_params
from targets.algorithms.adaptive import Params, current_limit, decide, observe, release

approx = pytest.approx


def test_registered_and_mapped_from_the_policy():
    assert "adaptive" in ALGORITHMS
    p = build_params("adaptive", Policy(100, 60, 16))
    assert (p.max_limit, p.initial_limit, p.min_limit, p.rule) == (16, 16, 1, "gradient2")
    assert build_params("adaptive", Policy(100, 60, 16), {"rule": "aimd"}).rule == "aimd"
    with pytest.raises(PolicyError, match="rule"):
        build_params("adaptive", Policy(100, 60), {"rule": "cubic"})


def test_admits_up_to_the_integer_part_of_the_limit_and_releases():
    p = Params(max_limit=10, initial_limit=2.5, min_limit=1)
    d1, s = decide(None, 0.0, 1, p)
    d2, s = decide(s, 0.0, 1, p)
    d3, s3 = decide(s, 0.0, 1, p)
    assert (d1.allowed, d1.remaining, d2.allowed, d2.remaining) == (True, 1, True, 0)
    assert not d3.allowed and d3.retry_after_s == p.hold_s and s3 == s  # a rejection takes nothing
    s = release(s, 0.1, 1, p)
    assert s[1] == 1 and decide(s, 0.1, 1, p)[0].allowed
    assert decide(None, 0.0, 11, p)[0].retry_after_s == math.inf


def test_gradient2_hand_computed_sequence():
    p = Params(max_limit=20, initial_limit=10, min_limit=1, smoothing=0.5, tolerance=1.5, long_window=600, queue_size=2)
    s = (10.0, 6.0, (0.0, 0, 0.0))  # limit 10, 6 in flight (not app-limited), no samples yet
    # 1st sample 0.1 s: long = 0.1; gradient = clamp(1.5 * 0.1 / 0.1) = 1 -> new = 10 + 2 = 12;
    # smoothed: 10 * 0.5 + 12 * 0.5 = 11
    s = observe(s, 0.0, 0.1, p)
    assert s == (approx(11.0), 6.0, (approx(0.1), 1, approx(0.1)))
    # 2nd sample 0.4 s: long = (0.1 + 0.4) / 2 = 0.25; gradient = clamp(1.5 * 0.25 / 0.4 = 0.9375)
    # new = 11 * 0.9375 + 2 = 12.3125; smoothed: 5.5 + 6.15625 = 11.65625
    s = observe(s, 0.0, 0.4, p)
    assert s == (approx(11.65625), 6.0, (approx(0.25), 2, approx(0.5)))
    # 3rd sample 2.0 s: long = (0.25 * 2 + 2.0) / 3 = 0.8333...; gradient = clamp(0.625) = 0.625
    # new = 11.65625 * 0.625 + 2 = 9.28515625; smoothed: 5.828125 + 4.642578125 = 10.470703125
    s = observe(s, 0.0, 2.0, p)
    assert s[0] == approx(10.470703125) and s[2][0] == approx(2.5 / 3)
    # app-limited (in flight 5 < 10.47 / 2 is false; 4 < 5.23 is true): the limit stays
    s = observe((s[0], 4.0, s[2]), 0.0, 5.0, p)
    assert s[0] == approx(10.470703125) and s[2][0] == approx((2.5 + 5.0) / 4)
    assert current_limit(s, p) == 10


def test_gradient2_clamps_the_gradient_at_one_half_and_the_limit_at_min():
    p = Params(max_limit=20, initial_limit=4, min_limit=3, smoothing=1.0, queue_size=0)
    s = observe((4.0, 4.0, (0.01, 10, 0.1)), 0.0, 10.0, p)  # after warm-up: EMA; ratio tiny -> gradient 0.5
    factor = 2 / 601
    assert s[2][0] == approx(0.01 * (1 - factor) + 10.0 * factor)
    assert s[0] == 3.0  # 4 * 0.5 = 2, clamped to min_limit 3


def test_gradient2_decays_a_stale_long_rtt():
    p = Params(max_limit=20, initial_limit=10, smoothing=0.2)
    s = observe((10.0, 0.0, (1.0, 10, 10.0)), 0.0, 0.1, p)  # long 1.0 -> EMA -> / 0.1 > 2 -> * 0.95
    factor = 2 / 601
    assert s[2][0] == approx((1.0 * (1 - factor) + 0.1 * factor) * 0.95)
    assert s[0] == 10.0  # app-limited: nothing in flight


def test_aimd_hand_computed_sequence():
    p = Params(max_limit=12, initial_limit=10, min_limit=2, rule="aimd", backoff_ratio=0.5, timeout_s=0.2)
    s = (10.0, 5.0, ())
    s = observe(s, 0.0, 0.1, p)      # fast, 5 * 2 >= 10: +1 -> 11
    assert s[0] == 11.0
    s = observe(s, 0.0, 0.1, p)      # 5 * 2 < 11: app-limited, stays 11
    assert s[0] == 11.0
    s = observe(s, 0.0, 0.3, p)      # slow: 11 * 0.5 = 5.5, truncated to 5 (AIMDLimit's int limit)
    assert s[0] == 5
    s = observe(s, 0.0, 0.3, p)      # 5 * 0.5 = 2.5 -> 2
    s = observe(s, 0.0, 0.3, p)      # 2 * 0.5 = 1 -> min 2
    assert s[0] == 2.0
    s = observe((12.0, 6.0, ()), 0.0, 0.1, p)  # 13 capped at max 12
    assert s[0] == 12.0
