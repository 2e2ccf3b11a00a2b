"""Token bucket warm-up: hand-computed ramps; without warm-up nothing changes."""

from __future__ import annotations

import math

import pytest

from targets.algorithms import ALGORITHMS, Policy, PolicyError, build_params
from targets.algorithms.token_bucket import Params, decide

approx = pytest.approx


def test_default_is_the_plain_bucket():
    p = build_params("token_bucket", Policy(10, 10, 4))
    assert (p.warmup_s, p.cold_factor) == (0.0, 3.0)
    d, s = decide(None, 0.0, 4, p)
    assert s == (0, 0.0)  # the two-element state of the plain bucket
    d, s = decide(s, 2.0, 3, p)  # refilled 2 at 1/s: rejected, retry (3 - 2) / 1
    assert not d.allowed and d.retry_after_s == 1.0 and d.remaining == 2.0


def test_ramp_hand_computed():
    # C=4, r=2/s, warm-up 2 s from r/2 (cold_factor 2): rate(u) = 2 * (0.5 + 0.25 u) for u <= 2
    p = Params(capacity=4, rate=2, warmup_s=2, cold_factor=2)
    d, s = decide(None, 0.0, 4, p)  # a fresh key is full (cold): the burst is unchanged
    assert d.allowed and s == (0, 0.0, 0.0)
    # refill over [0, u]: 2 * (0.5 u + u^2 / 8); full after 2.5 s (1.5 s worth at the ramp's end)
    assert d.reset_s == approx(2.5)
    d, _ = decide(s, 0.0, 1, p)  # 1 token: 2 (0.5 u + u^2/8) = 1  ->  u^2 + 4u - 4 = 0
    assert not d.allowed and d.retry_after_s == approx(-2 + math.sqrt(8))
    d, s = decide(s, 1.0, 1, p)  # refilled 2 * (0.5 + 0.125) = 1.25 (a plain bucket: 2)
    assert d.allowed and d.remaining == approx(0.25)
    d, s = decide(s, 2.0, 1, p)  # + 2 * (1.5 - 0.625) = 1.75
    assert d.remaining == approx(1.0)
    d, s = decide(s, 3.0, 1, p)  # past the ramp: the full rate, + 2
    assert d.remaining == approx(2.0)
    d, s = decide(s, 3.5, 1, p)  # 2 + 1 = 3 -> 2 left, still the ramp that started at 0
    assert d.remaining == approx(2.0) and s[2] == 0.0
    d, s = decide(s, 5.5, 1, p)  # + 4 would overflow: the bucket is full, so cold; a new ramp
    assert d.remaining == approx(3.0) and s == (3.0, 5.5, 5.5)


def test_a_full_bucket_is_cold_again():
    p = Params(capacity=4, rate=2, warmup_s=2, cold_factor=2)
    _, s = decide(None, 0.0, 4, p)
    _, s = decide(s, 10.0, 4, p)  # idle long enough to refill: a new ramp starts at 10
    assert s == (0, 10.0, 10.0)
    d, _ = decide(s, 11.0, 4, p)
    assert d.remaining == approx(1.25) and not d.allowed


def test_state_ttl_covers_the_slow_ramp_and_params_validate():
    p = Params(capacity=4, rate=2, warmup_s=2, cold_factor=2)
    assert ALGORITHMS["token_bucket"].state_ttl(p) == approx(2.5)  # the ramp's worst case above
    with pytest.raises(PolicyError, match="cold_factor"):
        build_params("token_bucket", Policy(10, 10), {"warmup_s": "5", "cold_factor": "0.5"})
