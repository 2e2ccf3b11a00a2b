"""The quota headers tell the quota that is enforced: for every policy a target accepts,
``RateLimit-Policy`` parses as a structured-field list (``http-sf``, an RFC 9651 parser) and its
q/w is the long-run rate the layer enforces; X-RateLimit-Limit is the same q. A fractional
policy is scaled, not rounded (``--limit 2.5 --window 0.5`` was told as ``q=2;w=1``)."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import http_sf
import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from targets.algorithms import ALGORITHMS
from targets.config import ConfigError, load
from targets.layers import build_layers

RATED = sorted(set(ALGORITHMS) - {"none", "concurrency", "adaptive"})
decimals = st.builds(lambda units, places: Decimal(units).scaleb(-places), st.integers(1, 10**6), st.integers(0, 3))


def told(config) -> tuple[int, int, int]:
    """(q, w, X-RateLimit-Limit) of the default per-client layer, through the target's own path."""
    layers, _ = build_layers(config)
    text = next(layer for layer in layers if layer.name == "per-client").variants[None].text
    (name, params), = http_sf.parse(text.policy[1], tltype="list")
    assert name == "per-client" and set(params) == {"q", "w"}
    assert all(isinstance(params[k], int) and params[k] > 0 for k in "qw")
    return params["q"], params["w"], int(text.quota[1])


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(RATED), decimals, decimals, st.one_of(st.none(), decimals))
def test_every_accepted_policy_tells_its_rate(algorithm, limit, window, burst):
    overrides = {"algorithm": algorithm, "limit": float(limit), "window_s": float(window), "burst": burst and float(burst)}
    q, w, legacy = told(load(None, overrides))  # accepted: decimals of up to 3 places always can be told
    assert Fraction(q, w) == Fraction(limit) / Fraction(window)
    assert legacy == q


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["token_bucket:rate", "leaky_bucket:rate", "gcra:interval_s", "fixed_window:limit",
                        "sliding_window_ring:window_s"]), decimals)
def test_a_param_override_is_what_is_told(which, value):
    """``--param rate=...`` (or interval_s, limit, window_s) changes the enforced rate: the
    header follows the params, not the policy they were derived from."""
    algorithm, param = which.split(":")
    config = load(None, {"algorithm": algorithm, "limit": 1000.0, "window_s": 60.0, "params": {param: str(value)}})
    q, w, _ = told(config)
    v = Fraction(value)
    expected = {"rate": v, "interval_s": 1 / v, "limit": v / 60, "window_s": Fraction(1000) / v}[param]
    assert Fraction(q, w) == expected


@pytest.mark.parametrize(("args", "told_as"), [
    ({"limit": 2.5, "window_s": 0.5}, (5, 1)),
    ({"limit": 100.0, "window_s": 60.0}, (100, 60)),
    ({"limit": 1.0, "window_s": 0.3}, (10, 3)),
    ({"limit": 7.5, "window_s": 1.5}, (15, 3)),  # scaled as little as makes both whole
])
def test_hand_computed_scalings(args, told_as):
    for algorithm in ("fixed_window", "token_bucket", "gcra"):
        q, w, legacy = told(load(None, {"algorithm": algorithm, **args}))
        assert (q, w) == told_as and legacy == q


def test_a_rate_that_needs_more_than_15_digits_is_refused():
    with pytest.raises(ConfigError, match=r"^limit: RateLimit-Policy cannot tell this rate truthfully"):
        load(None, {"algorithm": "fixed_window", "limit": 1e9, "window_s": 1.2345678901234567e-9})  # 8.1e17/s


def test_a_real_target_tells_a_fractional_policy_scaled(start):
    """``--limit 2.5 --window 0.5`` enforces 5 per second; it used to be told ``q=2;w=1``."""
    target = start("--limit", "2.5", "--window", "0.5", "--burst", "1")
    r = httpx.get(target.url + "/api/items", timeout=10)
    (name, params), = http_sf.parse(r.headers["ratelimit-policy"].encode(), tltype="list")
    assert (name, params) == ("per-client", {"q": 5, "w": 1})
    assert r.headers["x-ratelimit-limit"] == "5"
    (_, state), = http_sf.parse(r.headers["ratelimit"].encode(), tltype="list")
    assert state == {"r": 0, "t": 1}  # burst 1 spent; full again within 0.2 s, told rounded up
