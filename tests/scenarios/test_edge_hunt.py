"""The edge hunt in virtual time: each kind of window gives up its own worst case, and only there."""

from __future__ import annotations

import pytest

from analysis.metrics import over_admission
from harness.sim.simulator import simulate
from scenarios import build_model
from targets.algorithms import Policy, build_params

POLICY = Policy(10, 1.0, None)


def worst(scenario: str, algorithm: str) -> tuple[float, dict[str, int]]:
    """Over-admission of the run, and the admitted count per key."""
    model = build_model(scenario, POLICY.limit, POLICY.window_s, 1, {"rounds": "1"} if scenario == "edge_hunt" else {})
    table, _ = simulate(model, algorithm, POLICY, build_params(algorithm, POLICY))
    df = table.to_pandas()
    return over_admission(df, POLICY.limit, POLICY.window_s), df[df["allowed"]].groupby("key").size().to_dict()


@pytest.mark.parametrize(("algorithm", "expected", "admitted"), [
    # a window opened by each key's first request: 1 + 9 before its edge, 10 after; the clock key
    # meets that key's window mid-way (it opened with the first of its burst): 10
    ("limits_fixed_window", 1.9, {"hunt-first-0": 20, "hunt-clock-0": 10}),
    # a window aligned to the clock: the first-hit key's 9 and 10 share one window (10), the clock
    # key's two bursts fall in two (20)
    ("fixed_window", 2.0, {"hunt-first-0": 11, "hunt-clock-0": 20}),
    # a sliding log holds every W to L
    ("sliding_log", 1.0, {"hunt-first-0": 11, "hunt-clock-0": 10}),
])
def test_each_window_gives_up_its_own_edge_and_no_more(algorithm, expected, admitted):
    ratio, per_key = worst("edge_hunt", algorithm)
    assert ratio == pytest.approx(expected)
    assert per_key == admitted


def test_the_clock_edge_alone_misses_a_window_opened_by_first_requests():
    assert worst("boundary_burst", "limits_fixed_window")[0] == pytest.approx(1.0)
