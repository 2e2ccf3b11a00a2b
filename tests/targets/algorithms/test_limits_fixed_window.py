"""limits' fixed window (the slowapi fixed-window peers' model) on hand-computed sequences: the
window opens at a key's first hit, lasts W from it, and refused hits count."""

from __future__ import annotations

import math

import pytest

from targets.algorithms import ALGORITHMS, PEER_MODELS, Policy, build_params, get_algorithm

DECIDE = get_algorithm("limits_fixed_window").decide


def _run(steps: list[tuple[float, float]], limit: float = 3, window_s: float = 1) -> list[tuple]:
    params, state, out = build_params("limits_fixed_window", Policy(limit, window_s)), None, []
    for now, cost in steps:
        decision, state = DECIDE(state, now, cost, params)
        out.append((decision.allowed, decision.remaining, decision.retry_after_s, round(decision.reset_s, 6)))
    return out


def test_a_peer_model_never_a_suite_algorithm():
    assert "limits_fixed_window" in PEER_MODELS and "limits_fixed_window" not in ALGORITHMS


def test_the_window_is_anchored_to_the_first_hit_not_the_clock():
    # 3 per 1 s, first hit at 10.5: its window is [10.5, 11.5); the clock's [10, 11) would reset at 11
    assert _run([(10.5, 1), (10.6, 1), (10.9, 1), (11.1, 1), (11.4999, 1), (11.5, 1), (11.6, 1)]) == [
        (True, 2, 0.0, 1.0), (True, 1, 0.0, 0.9), (True, 0, 0.0, 0.6),
        (False, 0, 0.4, 0.4),  # 11.1: still the window of 10.5 (clock-aligned would admit)
        (False, 0, 0.0001, 0.0001),  # 100 µs before the edge
        (True, 2, 0.0, 1.0),  # 11.5 = 10.5 + W: expired (memory: expiry <= now), a new window from here
        (True, 1, 0.0, 0.9),
    ]


def test_refused_hits_count_in_the_window():
    # cost 2 refused at count 2 (2 + 2 > 3) is still counted: 4, so a cost 1 after it is refused
    # too (the suite's fixed_window would admit it: 2 + 1 <= 3)
    assert [d[0] for d in _run([(0.0, 2), (0.1, 2), (0.2, 1), (1.0, 1)])] == [True, False, False, True]


def test_an_idle_key_opens_its_window_at_its_next_hit():
    # the window of 0.0 ends at 2.0; the next hit at 5.3 opens [5.3, 7.3): no aligned edge at 6.0
    out = _run([(0.0, 3), (5.3, 3), (6.1, 1), (7.3, 1)], window_s=2)
    assert [d[0] for d in out] == [True, True, False, True]
    assert out[2][2] == pytest.approx(1.2) and out[1][3] == 2.0


def test_a_cost_above_the_limit_is_never_admitted():
    assert _run([(0.0, 4)])[0][:3] == (False, 0, math.inf)
