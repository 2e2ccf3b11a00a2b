"""The adaptive head to head: its measures on hand-computed series, and a small virtual campaign's
report carrying the table and the limit-over-time chart."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.adaptive import (
    collapse,
    goodput_in_bound,
    limit_over_time,
    measures,
    one_row_per_request,
    oscillation,
    rule_label,
    settle_time,
)
from analysis.report import build_report
from contract.run_info import Phase, RunInfo, RunPolicy
from contract.schema import CHARTS_DIR, DOWNSTREAM_STUCK_PHASE, REPORT_HTML, REPORT_MD, RUN_OK
from harness.campaign.simulate import load_sim_campaign
from harness.sim.runner import execute, plan_from_campaign

T = np.arange(10.0)
FALLS = np.array([16, 16, 16, 16, 10, 8, 6, 6, 6, 6], dtype=float)


def test_goodput_counts_only_2xx_answered_within_the_bound() -> None:
    intended = np.array([0.0, 0.0, 1.0, 1.0, 2.0])
    done = np.array([0.1, 0.6, 1.5, 1.2, np.nan])
    status = np.array([200, 200, 200, 429, 200])
    # in bound: 0.1 (200) and 0.5 (200, exactly the bound); 0.6 late; the 429 and the unanswered never count
    assert goodput_in_bound(intended, done, status, span_s=4.0, bound_s=0.5) == 0.5
    assert goodput_in_bound(intended, done, status, span_s=0.0) is None


def test_settling_is_timed_from_the_change_to_the_last_step_outside_the_band() -> None:
    # window t in [4, 10): the last quarter (t >= 8.5) holds 6; 10 and 8 are outside 6 +- 10%: settled at t = 6
    assert settle_time(T, FALLS, 4.0, 10.0) == 2.0
    # already settled when the window opens
    assert settle_time(T, FALLS, 6.0, 10.0) == 0.0
    # out of the band up to the window's last sample: settled only at its end
    assert settle_time(T, np.array([1, 1, 1, 1, 1, 1, 1, 1, 1, 5.0]), 0.0, 10.0) == pytest.approx(10.0 - 0.0)
    assert settle_time(T, FALLS, 20.0, 30.0) is None


def test_oscillation_is_std_over_mean_of_the_window() -> None:
    limit = np.array([4.0, 6.0, 4.0, 6.0, 100.0])
    assert oscillation(T[:5], limit, 0.0, 4.0) == 0.2  # population std 1, mean 5
    assert oscillation(T[:5], np.full(5, 7.0), 0.0, 5.0) == 0.0
    assert oscillation(T[:5], limit, 10.0, 20.0) is None


def test_measures_read_the_break_phase_and_the_logged_limit() -> None:
    info = RunInfo(status=RUN_OK, scenario="downstream_breaks-timeout-aimd", algorithm="adaptive", store="memory",
                   policy=RunPolicy(1000, 1.0, 16), phases=(Phase(DOWNSTREAM_STUCK_PHASE, 4.0, 7.0),))
    decisions = pd.DataFrame({"t": T, "adaptive_limit": [4, 6, 4, 6, 16, 16, 3, 3, 3, 3.0]})
    client = pd.DataFrame({"intended_t": T, "done_t": T + 0.1, "status": [200] * 9 + [429]})
    row = measures(info, decisions, client, origin=0.0)
    # break [4, 7): no sample in its last quarter, so the level is the last one, 3; 16 is outside: settled at t = 6;
    # recovery [7, 9]: 3 all along -> 0 s; steady state: the second half before the break, t in [2, 4): 4, 6
    assert (row["limit_react_s"], row["limit_recover_s"], row["limit_cov"], row["limit_mean"]) == (2.0, 0.0, 0.2, 5.0)
    assert row["goodput_in_bound_rps"] == round(9 / 9.1, 3)
    # ended on 3, under a quarter of its peak 16, from t = 6 on: collapsed there, never recovered
    assert (row["limit_collapsed_s"], row["limit_floor"]) == (6.0, 3.0)


def test_a_collapse_is_a_limit_that_ends_on_its_floor() -> None:
    assert collapse(T[:4], np.array([16.0, 2.0, 1.05, 1.0])) == (2.0, 1.0)  # 2 is above the band, 1.05 within 10%
    assert collapse(T[:4], np.array([16.0, 1.0, 1.0, 5.0])) is None  # probed back up past a quarter of 16
    assert collapse(T[:4], np.array([16.0, 8.0, 8.0, 8.0])) is None  # halved: not a collapse
    assert collapse(T[:4], np.full(4, np.nan)) is None
    assert collapse(T[:4], np.array([16.0, 1.0, 1.0, 3.0])) is None  # low, but its last sample off the floor


def test_the_chart_series_keeps_each_bins_last_limit_and_rules_are_named() -> None:
    series = limit_over_time(np.array([0.01, 0.02, 0.07, 0.2]), np.array([1.0, 2.0, 3.0, np.nan]), origin=0.0)
    assert series["t"].tolist() == [0.0, 0.05] and series["limit"].tolist() == [2.0, 3.0]
    assert rule_label({"rule": "gradient2", "window": "average"}) == "gradient2 windowed"
    assert rule_label({"rule": "aimd", "window": "none"}) == "aimd" and rule_label({}) is None
    assert rule_label({"rule": "aimd"}, {"rate": 350.0, "burst": 16.0}) == "aimd + bucket 350/s, burst 16"


def test_a_live_layered_log_counts_each_request_once() -> None:
    # a live target logs an admitted request once per layer (gateway, then adaptive with its limit);
    # a refused one once, on the layer that refused it
    log = pd.DataFrame({
        "t": [1.0, 1.0, 2.0, 3.0, 4.0, 4.0],
        "limit_name": ["gateway", "adaptive", "gateway", "adaptive", "gateway", "adaptive"],
        "allowed": [True, True, False, False, True, True],
        "adaptive_limit": [np.nan, 5.0, np.nan, 5.0, np.nan, 6.0],
    })
    df, kept = one_row_per_request(log)
    assert kept.tolist() == [1, 2, 3, 5]
    assert df["limit_name"].tolist() == ["adaptive", "gateway", "adaptive", "adaptive"]
    assert df["allowed"].tolist() == [True, False, False, True]
    # one layer (or the simulator's one row per request): nothing to drop
    assert one_row_per_request(log[log["limit_name"] == "adaptive"])[1] is None


SMALL = """name: h2h-small
seed: 1
policy: {limit: 1000, window_s: 1, burst: 16}
algorithms: [adaptive]
scenarios:
  - {name: downstream_breaks, label: timeout-gradient2, params: {kind: timeout, break_at_s: 1, recover_at_s: 2, duration_s: 3},
     algorithm_params: {adaptive: {rule: gradient2}}}
  - {name: downstream_breaks, label: timeout-aimd, params: {kind: timeout, break_at_s: 1, recover_at_s: 2, duration_s: 3},
     algorithm_params: {adaptive: {rule: aimd}}}
"""


def test_a_virtual_head_to_head_reports_its_table_and_chart(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(SMALL)
    out = tmp_path / "results"
    execute(plan_from_campaign(load_sim_campaign(tmp_path / "c.yaml")), out)
    report = build_report(out)
    aimd = next(r for r in report.rows if r["adaptive_rule"] == "aimd")
    # AIMD halves at the 1 s timeout (its 250 ms bound): the limit settles low within the break
    assert aimd["break_kind"] == "timeout" and aimd["limit_react_s"] is not None and aimd["limit_react_s"] < 1.0
    md = (out / REPORT_MD).read_text()
    section = md.split("## Adaptive head to head", 1)[1].split("\n## ", 1)[0]
    assert "### timeout" in section and "| gradient2 |" in section and "| aimd |" in section
    assert f"({CHARTS_DIR}/adaptive_limit.png)" in section and (out / CHARTS_DIR / "adaptive_limit.png").is_file()
    assert '<details id="adaptive-head-to-head">' in (out / REPORT_HTML).read_text()
