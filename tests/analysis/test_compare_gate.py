"""How `compare` judges each headline figure (analysis/gate.py) and what it names before its
verdict (analysis/matching.py), on hand-made summary rows and on the crafted live folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from analysis.compare import Folder, failed, judged, verdict
from analysis.gate import EXACT, THRESHOLD_ONLY, Limits, Side, judge
from analysis.matching import by_identity
from analysis.spread import group
from contract.schema import CAMPAIGN_FILE, RUN_FILE
from harness.cli.main import main

LIMITS = Limits(2.0, 0.01)


def _row(run: str = "page_load_burst__fixed_window__memory", **over: Any) -> dict[str, Any]:
    scenario, algorithm, store = run.split("__")[:3]
    row = {"run": run, "scenario": scenario, "algorithm": algorithm, "store": store, "system": "suite", "kind": "live",
           "seed": None, "twin_of": None, "limit": 100.0, "window_s": 60.0, "burst": 100.0, "degraded_share": None,
           "over_admission": 1.0, "in_flight_ratio": None, "rejected_legit_rate": 24 / 35, "rejected_legit": 24,
           "legit_requests": 35, "latency_p99_intended_ms": 100.0, "goodput_rps": 10.0, "false_admits": 0,
           "cpu_target_ms_per_1k": 120.0, "cpu_target_us_per_req": 100.0, "cpu_target_us_per_req_low": 98.04,
           "cpu_target_us_per_req_high": 101.96}
    return {**row, **over}


def _folder(*rows: dict[str, Any]) -> Folder:
    return Folder(by_identity(group(list(rows))), {r["run"]: r for r in rows}, [], {})


def _side(*rows: dict[str, Any]) -> Side:
    return Side(group(list(rows))[0], list(rows))


def test_two_back_to_back_smoke_runs_pass() -> None:
    # the pair: 24 then 26 of 35 legitimate requests rejected (68.57% -> 74.29%): p 0.298
    c = judged(_folder(_row()), _folder(_row(rejected_legit=26, rejected_legit_rate=26 / 35)), LIMITS)
    assert c.regressions == [] and not failed(c)
    assert verdict(c) == ["no regressions at 95% confidence family-wise (Bonferroni over 3 tests), 1 run a side"]


def test_each_figure_names_the_model_that_judged_it() -> None:
    a, b = _side(_row()), _side(_row(rejected_legit=26, rejected_legit_rate=26 / 35, over_admission=1.2,
                                     latency_p99_intended_ms=300.0, goodput_rps=4.0, cpu_target_us_per_req=103.0,
                                     cpu_target_us_per_req_low=101.04, cpu_target_us_per_req_high=104.96))
    got = {j.measure: (j.worse, j.model, None if j.p is None else round(j.p, 5)) for j in judge(a, b, LIMITS)}
    # 100 then 120 admitted in a window: P(X >= 120 | Binomial(220, 1/2)), about z = 9.5 / sqrt(55) = 1.28
    assert got.pop("over_admission")[:2] == (True, "Poisson count")
    assert got == {
        "rejected_legit_rate": (True, "binomial", 0.29835),
        "latency_p99_intended_ms": (True, THRESHOLD_ONLY, None),  # 3x, nothing measures one run's noise
        "goodput_rps": (True, THRESHOLD_ONLY, None),  # 10/s -> 4/s: fell past 10 / 2
        "cpu_target_us_per_req": (True, "own 95% intervals", 0.01695),  # se 1 a side, z = 3 / sqrt(2)
    }
    over = next(j for j in judge(a, b, LIMITS) if j.measure == "over_admission")
    assert over.p == pytest.approx(0.1001, abs=1e-3)


def test_past_its_policys_bound_a_limiter_is_flagged_whatever_the_noise() -> None:
    bucket = "page_load_burst__token_bucket__memory"  # L 100 per 60 s, burst 100: at most (100 + 100) / 100 = 2x
    c = judged(_folder(_row(bucket, over_admission=1.95)), _folder(_row(bucket, over_admission=2.35)), LIMITS)
    assert c.regressions == [f"{bucket}: over-admission rose 1.95x -> 2.35x (tolerance 0.01; past its policy's bound "
                             "of 2.00x: exact)"]  # as a Poisson count, 195 -> 235 is p 0.030: within the noise
    already = judged(_folder(_row(bucket, over_admission=2.35)), _folder(_row(bucket, over_admission=2.36)), LIMITS)
    assert already.regressions == []  # A was past it too: only the noise model judges the rise


def test_virtual_runs_of_the_same_seeds_are_compared_exactly() -> None:
    virtual = {"kind": "virtual", "seed": 1}
    a, b = _side(_row(**virtual)), _side(_row(**virtual, over_admission=1.02, cpu_target_us_per_req=101.5))
    got = {j.measure: (j.worse, j.model, j.p) for j in judge(a, b, LIMITS)}
    assert got["over_admission"] == (True, EXACT, None)  # 0.02 x L more: past the tolerance of 0.01
    assert got["cpu_target_us_per_req"] == (True, EXACT, None)  # 1.5% more: past 1% of A's
    assert got["rejected_legit_rate"] == (False, EXACT, None)
    c = judged(_folder(_row(**virtual)), _folder(_row(**virtual, over_admission=1.02)), LIMITS)
    assert c.regressions == ["page_load_burst__fixed_window__memory: over-admission rose 1.00x -> 1.02x "
                             "(tolerance 0.01; exact: virtual, same seeds)"]


def test_repeats_are_judged_by_their_spread_and_say_how_many_a_side() -> None:
    def runs(p99s: list[float], seed0: int) -> list[dict[str, Any]]:
        return [_row(f"steady__gcra__memory__r{k + 1}", kind="virtual", seed=seed0 + k, latency_p99_intended_ms=v)
                for k, v in enumerate(p99s)]
    inside = judged(_folder(*runs([60.0, 100.0, 260.0], 1)), _folder(*runs([150.0, 210.0, 300.0], 11)), LIMITS)
    assert inside.regressions == [] and inside.runs_a_side == "3 runs a side"  # 2.1x, but t = 1.24 (df 3.9)
    apart = judged(_folder(*runs([90.0, 100.0, 110.0], 1)), _folder(*runs([290.0, 300.0, 310.0], 11)), LIMITS)
    (line,) = apart.regressions
    assert line.startswith("steady__gcra__memory: P99 rose 100.0 (90.0-110.0) ms -> 300.0 (290.0-310.0) ms "
                           "(3.0x, threshold 2x; spread across seeds, p 8.2e-06 < 0.01)")  # t = 200 / sqrt(200 / 3) = 24.5, df 4
    assert verdict(apart)[0] == "seeds differ in 1 run(s): A 1, 2, 3, B 11, 12, 13 (steady__gcra__memory)"


def test_runs_are_matched_by_what_they_are_and_differences_come_first() -> None:
    a = _folder(_row())
    renamed = _row("page_load_burst__fixed_window__memory__other", kind="virtual", limit=50.0, burst=50.0,
                   rejected_legit=35, rejected_legit_rate=1.0)
    c = judged(a, _folder(renamed), LIMITS)
    assert not c.comparable and c.regressions == [] and not c.missing
    assert verdict(c)[:3] == [
        "POLICIES DIFFER in 1 run(s): A L 100 per 60 s, B L 50 per 60 s (page_load_burst__fixed_window__memory)",
        "virtual against live in 1 run(s): A live, B virtual (page_load_burst__fixed_window__memory)",
        "NOT COMPARABLE: the policies differ, so no change is called a regression"]


def test_a_degraded_run_fails_the_gate_with_its_name() -> None:
    c = judged(_folder(_row()), _folder(_row(degraded_share=0.25)), LIMITS)
    assert c.missing == {"page_load_burst__fixed_window__memory": "degraded (decisions from a fallback)"}
    assert failed(c) and not failed(c, allow_missing=True)
    assert verdict(c)[-1] == "  degraded (decisions from a fallback): page_load_burst__fixed_window__memory"


def test_the_command_exits_3_across_policies_and_names_the_machines(live_folder: Path, copy_of, capsys) -> None:
    b = copy_of(live_folder)
    run_json = b / "runs" / "boundary_burst__token_bucket__memory" / RUN_FILE
    info = json.loads(run_json.read_text())
    run_json.write_text(json.dumps({**info, "policy": {**info["policy"], "limit": 10}}))
    campaign = yaml.safe_load((b / CAMPAIGN_FILE).read_text()) or {}
    campaign["machine"] = {"platform": "Linux-other", "machine": "aarch64", "cpu_count": 64}
    (b / CAMPAIGN_FILE).write_text(yaml.safe_dump(campaign))
    assert main(["compare", str(live_folder), str(b)]) == 3
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "POLICIES DIFFER in 1 run(s): A L 20 per 1 s, B L 10 per 1 s (boundary_burst__token_bucket__memory)"
    assert lines[1].startswith("machines differ: A ") and lines[1].endswith("B Linux-other aarch64, 64 CPUs")
    assert lines[2] == "NOT COMPARABLE: the policies differ, so no change is called a regression"


def test_a_run_that_failed_in_the_baseline_fails_the_gate(live_folder: Path, copy_of, capsys) -> None:
    a = copy_of(live_folder)
    run_json = a / "runs" / "ramp__token_bucket__memory" / RUN_FILE
    run_json.write_text(json.dumps({**json.loads(run_json.read_text()), "status": "failed", "error": "target died"}))
    assert main(["compare", str(a), str(live_folder)]) == 1
    out = capsys.readouterr().out
    assert "unreadable or failed in A: ramp__token_bucket__memory" in out


def test_a_run_marked_degraded_fails_the_gate_with_its_name() -> None:
    c = judged(_folder(_row()), _folder(_row(status="degraded")), LIMITS)
    assert c.missing == {"page_load_burst__fixed_window__memory": "degraded (run marked degraded)"}
    assert failed(c) and not failed(c, allow_missing=True)
