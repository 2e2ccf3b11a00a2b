"""Traefik's rateLimit (the traefik peer's model) on hand-computed sequences: x/time/rate's bucket
with Traefik's burst, waits up to maxDelay held rather than refused, and an idle key's bucket
recreated full once its whole-second ttl has passed (targets/algorithms/traefik_rate.py cites
the lines)."""

from __future__ import annotations

import pytest

from targets.algorithms import ALGORITHMS, PEER_MODELS, Policy, PolicyError, build_params, get_algorithm

DECIDE = get_algorithm("traefik_rate").decide


def _run(policy: Policy, times: list[float]) -> list[tuple[bool, float]]:
    """(admitted, hold s) of one key's requests."""
    params, state, out = build_params("traefik_rate", policy), None, []
    for now in times:
        decision, state = DECIDE(state, now, 1.0, params)
        out.append((decision.allowed, pytest.approx(decision.delay_s, abs=1e-9)))
    return out


def _admitted(policy: Policy, times: list[float]) -> int:
    return sum(ok for ok, _ in _run(policy, times))


def test_a_peer_model_never_a_suite_algorithm():
    assert "traefik_rate" in PEER_MODELS and "traefik_rate" not in ALGORITHMS


def test_the_documented_run_burst_then_held_then_refused():
    # average 2, burst 3: 2/s, maxDelay 1 s / (2 * 2) = 250 ms, as Traefik answered live (3 x 200, then 429)
    assert _run(Policy(2, 1, 3), [1000.0] * 4 + [1000.3, 1000.31, 1000.55, 1000.8]) == [
        (True, 0), (True, 0), (True, 0),
        (False, 0),  # -1 token: a wait of 500 ms > 250 ms, refused and the token given back
        (True, 0.2),  # 0 + 0.3 s x 2 = 0.6: the token exists in 200 ms <= 250 ms: admitted, held 200 ms
        (False, 0),  # -0.4 + 0.02 = -0.38: a wait of 690 ms
        (False, 0),  # -0.38 + 0.48 = 0.1: 450 ms
        (True, 0.2),  # -0.38 + 0.98 = 0.6: 200 ms again (refusals took nothing)
    ]


def test_a_refusal_says_when_a_request_would_be_admitted():
    params = build_params("traefik_rate", Policy(2, 1, 1))
    _, state = DECIDE(None, 1000.0, 1, params)
    refused, _ = DECIDE(state, 1000.0, 1, params)
    assert (refused.allowed, refused.retry_after_s) == (False, pytest.approx(0.25))  # wait 500 ms - hold 250 ms


def test_burst_defaults_to_one_and_period_scales_the_rate():
    # average 6, period 1m (#8330): one request per 10 s, one at once; maxDelay 500 ms under 1/s
    assert _run(Policy(6, 60, 1), [1000.0, 1001.0, 1009.6, 1019.0]) == [
        (True, 0),
        (False, 0),  # 0.1 token: a wait of 9 s
        (True, 0.4),  # 0.96 token: the last 0.04 in 400 ms <= 500 ms: held
        (False, 0),  # -0.04 + 0.94 = 0.9: a wait of 1 s
    ]


def test_max_delay_truncates_the_rate_to_a_whole_number():
    # average 5 per 2 s = 2.5/s: maxDelay 1 s / (2 * int(2.5)) = 250 ms, not 1 / (2 x 2.5) = 200 ms
    assert _run(Policy(5, 2, 1), [1000.0, 1000.16]) == [(True, 0), (True, 0.24)]


def test_a_burst_after_an_idle_pause_longer_than_the_ttl_is_the_whole_burst():
    # 10/s, burst 100, ttl 2 s: the bucket emptied at 1000.0 is dropped; at 1002.0 a new one, full
    policy = Policy(10, 1, 100)
    assert _admitted(policy, [1000.0] * 101 + [1002.0] * 101) == 200
    # the suite's token bucket of the same burst and rate refills 2 s x 10 = 20
    tb = build_params("token_bucket", policy)
    state, admitted = None, 0
    for now in [1000.0] * 101 + [1002.0] * 101:
        decision, state = get_algorithm("token_bucket").decide(state, now, 1, tb)
        admitted += decision.allowed
    assert admitted == 120


def test_the_ttl_counts_whole_unix_seconds():
    # emptied at 1000.9: expiry floor(1000.9) + 2 = 1002. Idle 1.05 s (at 1001.95): kept, 10.5 tokens,
    # the 11th waits exactly 50 ms (maxDelay) and is held; idle 1.1 s (at 1002.0): recreated full
    policy = Policy(10, 1, 100)
    kept = _run(policy, [1000.9] * 100 + [1001.95] * 12)[100:]
    assert kept == [(True, 0)] * 10 + [(True, 0.05), (False, 0)]
    assert _admitted(policy, [1000.9] * 100 + [1002.0] * 101) == 200


def test_a_refused_request_keeps_the_bucket_alive():
    # 1/s, burst 5, ttl 2: emptied at 1000.9 (expiry 1002); refused at 1001.1 (0.2 token, a wait of
    # 800 ms > 500 ms) sets the expiry to 1003, so at 1002.2 the bucket is kept (1.3 tokens): 1 admitted
    policy = Policy(1, 1, 5)
    assert _admitted(policy, [1000.9] * 5 + [1001.1] + [1002.2] * 5) == 6
    assert _admitted(policy, [1000.9] * 5 + [1002.2] * 5) == 10  # without it: expired, full again


def test_a_slow_limit_keeps_its_bucket_for_one_plus_its_interval():
    # 2 per 5 s = 0.4/s: ttl 1 + int(2.5) = 3. Emptied at 1000.9 (expiry 1003): at 1002.95 the bucket
    # has 0.82 token, the request is held 450 ms; at 1003.0 it is a new, full bucket: no hold
    assert _run(Policy(2, 5, 1), [1000.9, 1002.95]) == [(True, 0), (True, 0.45)]
    assert _run(Policy(2, 5, 1), [1000.9, 1003.0]) == [(True, 0), (True, 0)]


@pytest.mark.parametrize(("policy", "message"), [
    (Policy(2.5, 1, 1), "average 2.5"),
    (Policy(2, 1, 1.5), "burst 1.5"),
])
def test_what_traefik_cannot_express_is_refused(policy: Policy, message: str):
    with pytest.raises(PolicyError, match=message):
        build_params("traefik_rate", policy)
