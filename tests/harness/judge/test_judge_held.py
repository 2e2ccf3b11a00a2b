"""Requests a limiter held instead of refusing, read from the client's answers alone: a held
request is slower than a fresh key's first by more than HOLD_S, and is followed on its key by a
refusal or by another held one. Hand-built answers (times in ms, each request after the one before)."""

from __future__ import annotations

import pytest

from analysis.header_truth import Answer
from harness.judge.held import HOLD_S, MIN_HELD, Held, held
from harness.judge.verdict import judge
from harness.judge.virtual import VirtualEndpoint
from targets.algorithms import Policy

FAST_MS = 2.0


def _key(name: str, round_trips_ms: list[float | str], start: float = 0.0) -> list[Answer]:
    """One key's requests one after another: a number is an admitted request's round trip in ms,
    ``"429"`` a refusal (answered in FAST_MS)."""
    out, t = [], start
    for rt in round_trips_ms:
        ms = FAST_MS if rt == "429" else float(rt)
        out.append(Answer(name, t, t + ms / 1000, 429 if rt == "429" else 200))
        t += ms / 1000 + 0.001
    return out


def _interleaved(*keys: list[Answer]) -> list[Answer]:
    return sorted((a for key in keys for a in key), key=lambda a: a.sent)


def test_traefik_like_holds_each_followed_by_a_refusal_are_shaping():
    """A bucket of 3 at 2/s that holds up to 250 ms: after the burst, one request held, then refused."""
    keys = [_key(f"k{i}", [2, 2, 2, 180 + 20 * i, "429", "429"], start=10.0 * i) for i in range(4)]
    found = held(_interleaved(*keys))
    assert found == Held(requests=4, admitted=16, baseline_s=pytest.approx(0.002), median_s=pytest.approx(0.198),
                         max_s=pytest.approx(0.238))
    assert found.sentence().startswith("held, not refused: 4 of 16 admitted requests answered 198 ms later than a "
                                       "fresh key's first (2.0 ms) at the median, 238 ms at most")


def test_nginx_like_pacing_without_refusals_is_shaping():
    """limit_req without nodelay at 5/s, burst 2: every request past the burst waits 200 ms."""
    keys = [_key(f"k{i}", [2, 2, 200, 200, 200, 200], start=10.0 * i) for i in range(3)]
    found = held(_interleaved(*keys))
    assert found is not None and (found.requests, found.admitted) == (9, 18)  # a key's last: nothing after it
    assert found.median_s == pytest.approx(0.198)


def test_a_busy_moment_is_not_shaping():
    """Slow admissions at random, each followed by a fast one: the machine, not the limiter."""
    keys = [_key(f"k{i}", [2, 2, 300, 2, 2, "429"], start=10.0 * i) for i in range(5)]
    assert held(_interleaved(*keys)) is None


@pytest.mark.parametrize("extra_ms", [1000 * HOLD_S - 10, 1000 * HOLD_S - 1])
def test_a_wait_within_hold_s_of_the_baseline_is_not_told_apart(extra_ms):
    keys = [_key(f"k{i}", [2, 2, 2 + extra_ms, "429"], start=10.0 * i) for i in range(5)]
    assert held(_interleaved(*keys)) is None


def test_too_few_held_requests_say_nothing():
    keys = [_key("k0", [2, 2, 200, "429"]), _key("k1", [2, 2, 200, "429"], start=10.0), _key("k2", [2, 2, 2], start=20.0)]
    assert held(_interleaved(*keys)) is None


@pytest.mark.slow  # two whole judge sessions in virtual time
def test_a_session_names_traefiks_hold_and_a_plain_bucket_is_not_said_held():
    """Traefik's rateLimit at 2/s, burst 2 holds a request up to 250 ms (1 s / (2 x 2)); a token
    bucket of the same policy decides the same requests without holding any."""
    traefik = VirtualEndpoint("traefik_rate", Policy(2, 1.0, 2))
    v = judge(traefik, max_wait_s=30)
    delays = [s.answer.done - s.answer.sent - traefik.service_s for s in traefik.log if s.answer.allowed]
    assert v.held is not None and v.best.model == "traefik_rate"
    assert v.held.requests >= MIN_HELD and v.held.baseline_s == pytest.approx(traefik.service_s, abs=1e-6)  # epoch seconds: µs apart
    assert v.held.max_s == pytest.approx(max(delays), abs=1e-6) and max(delays) <= 0.25
    bucket = judge(VirtualEndpoint("token_bucket", Policy(2, 1.0, 2)), max_wait_s=30)
    assert bucket.held is None and bucket.best.model == "token_bucket"
