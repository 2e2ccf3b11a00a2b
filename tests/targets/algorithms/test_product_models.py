"""The exact models of products that do not run here (envoyproxy/ratelimit, Kong rate-limiting,
caddy-ratelimit), each held to sequences computed by hand from the product's source lines (the
models' docstrings cite them)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from targets.algorithms import ALGORITHMS, PEER_MODELS, Policy, PolicyError, build_params, get_algorithm

EDGE = 1_760_000_040.0  # a multiple of 60: a minute edge of the epoch


def run(name: str, policy: Policy, requests: list[tuple[float, float]]) -> list[bool]:
    decide, params, state, out = get_algorithm(name).decide, build_params(name, policy), None, []
    for t, cost in requests:
        decision, state = decide(state, t, cost, params)
        out.append(decision.allowed)
    return out


@pytest.mark.parametrize("name", ["envoy_ratelimit_window", "kong_window", "caddy_ring"])
def test_they_are_peer_models_not_suite_algorithms(name):
    assert name in PEER_MODELS and name not in ALGORITHMS


def test_envoy_ratelimit_admits_2x_across_an_epoch_edge():
    """10 per minute: 10 in the last second of a minute and 10 in the first of the next all pass
    (20 inside 2 s), the 11th of each window is refused."""
    before = [(EDGE - 1 + 0.05 * i, 1.0) for i in range(11)]
    after = [(EDGE + 0.05 * i, 1.0) for i in range(11)]
    assert run("envoy_ratelimit_window", Policy(10, 60), before + after) == [True] * 10 + [False] + [True] * 10 + [False]


def test_envoy_ratelimit_counts_refused_requests():
    """INCRBY before the decision: a refused request of hits_addend 4 at count 8 of 10 makes the
    count 12, so a request of 1 that would have fit (9) is refused too, until the next second."""
    decisions = run("envoy_ratelimit_window", Policy(10, 1),
                    [(EDGE + 0.1, 8.0), (EDGE + 0.2, 4.0), (EDGE + 0.3, 1.0), (EDGE + 1.0, 1.0)])
    assert decisions == [True, False, False, True]


def test_envoy_ratelimit_windows_are_whole_seconds_and_30_day_months():
    """UnixNow() truncates: 0.999 s past an edge is still that second; MONTH is 2592000 s from
    the epoch (1970-01-31 is in the second month block), not a calendar month."""
    assert run("envoy_ratelimit_window", Policy(1, 1), [(EDGE + 0.001, 1.0), (EDGE + 0.999, 1.0)]) == [True, False]
    jan_30, jan_31 = 29 * 86400 + 10.0, 30 * 86400 + 10.0
    assert run("envoy_ratelimit_window", Policy(1, 2592000), [(jan_30, 1.0), (jan_31, 1.0)]) == [True, True]
    with pytest.raises(PolicyError, match="requests_per_unit per unit"):
        build_params("envoy_ratelimit_window", Policy(7, 9))


def _utc(*parts: int) -> float:
    return datetime(*parts, tzinfo=UTC).timestamp()


def test_kong_windows_are_utc_calendar_months_and_refusals_are_not_counted():
    """month: 3 (a calendar month): 3 pass on 31 January, the 4th is refused (remaining 0), and
    1 February 00:00:00 UTC is a new window however close; refused requests never counted."""
    month = Policy(3, 2592000)
    jan_31 = _utc(2026, 1, 31, 23, 59, 58)
    feb_1 = _utc(2026, 2, 1)
    assert run("kong_window", month, [(jan_31, 1.0)] * 5 + [(feb_1, 1.0)] * 4) == [True] * 3 + [False] * 2 + [True] * 3 + [False]
    # a 28-day February: 1 March is the next window, though 30 days have not passed
    assert run("kong_window", Policy(1, 2592000), [(feb_1, 1.0), (_utc(2026, 3, 1), 1.0)]) == [True, True]
    # a leap year's 366 days: 31 December 2028 is still 2028's window
    assert run("kong_window", Policy(1, 31536000), [(_utc(2028, 1, 1), 1.0), (_utc(2028, 12, 31), 1.0),
                                                    (_utc(2029, 1, 1), 1.0)]) == [True, False, True]


def test_kong_second_windows_are_ngx_time_whole_seconds():
    second = Policy(2, 1)
    assert run("kong_window", second, [(EDGE + 0.2, 1.0), (EDGE + 0.5, 1.0), (EDGE + 0.9, 1.0), (EDGE + 1.0, 1.0)]) \
        == [True, True, False, True]


def test_caddy_is_an_exact_sliding_log_of_admissions_strictly_older_than_the_window():
    """events 2, window 5 s: admitted at 0 and 1; at 5.0 the oldest (0) is exactly 5 s old: not
    more than the window, refused (and not recorded); at 5.000001 admitted; at 5.5 the oldest is
    1 (4.5 s): refused; at 6.000001 admitted."""
    t0 = EDGE
    times = [t0, t0 + 1, t0 + 5, t0 + 5.000001, t0 + 5.5, t0 + 6.000001]
    assert run("caddy_ring", Policy(2, 5), [(t, 1.0) for t in times]) == [True, True, False, True, False, True]


@given(st.lists(st.integers(0, 30_000_000), min_size=1, max_size=60).map(sorted), st.integers(1, 5))
def test_caddy_admits_exactly_what_a_log_of_admissions_admits(offsets_us, limit):
    """In any window of 2 s (open at its start) at most `limit` admissions, and every refusal had
    `limit` admissions strictly within the last 2 s: the sliding log's definition."""
    times = [EDGE + us / 1e6 for us in offsets_us]
    decisions = run("caddy_ring", Policy(limit, 2), [(t, 1.0) for t in times])
    admitted: list[int] = []
    for us, ok in zip(offsets_us, decisions):
        recent = [a for a in admitted if us - a <= 2_000_000]
        assert ok == (len(recent) < limit)
        if ok:
            admitted.append(us)
