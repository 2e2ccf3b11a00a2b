"""Repeats as one figure with its noise: hand-computed medians, ranges and the rule that says
whether two figures differ; a repeated simulation campaign grouped by the summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from analysis.analyze import analyze
from analysis.answers import answers
from analysis.loader import load_results
from analysis.spread import CI95, MIN_MAX, apart, group, with_spread
from harness.cli.main import main


def _row(run: str, algorithm: str, p99: float, **extra) -> dict:
    return {"run": run, "scenario": "unhealthy_downstream", "algorithm": algorithm, "store": "memory", "system": "suite",
            "limit": 50.0, "window_s": 1.0, "latency_p99_intended_ms": p99, "rejected_rate": 0.0, "repeat": None, **extra}


def test_repeats_group_into_median_and_min_max() -> None:
    rows = [_row(f"u__fixed_window__memory__r{k}", "fixed_window", p, requests=n)
            for k, (p, n) in enumerate([(1057.0, 100), (1064.0, 120), (1060.0, 110)], 1)]
    (g,) = group(rows)
    assert g["run"] == "u__fixed_window__memory" and g["repeats"] == 3 and g["spread_kind"] == MIN_MAX
    assert g["latency_p99_intended_ms"] == 1060.0 and g["spread"]["latency_p99_intended_ms"] == [1057.0, 1064.0]
    assert g["requests"] == 110 and isinstance(g["requests"], int)
    assert with_spread(g, "latency_p99_intended_ms", "1,060", lambda v: f"{v:,.0f}") == "1,060 (1,057-1,064)"


def test_five_repeats_give_a_bootstrap_interval_of_the_median() -> None:
    values = [10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 60.0]
    (g,) = group([_row(f"u__gcra__memory__r{k}", "gcra", v) for k, v in enumerate(values, 1)])
    low, high = g["spread"]["latency_p99_intended_ms"]
    assert g["spread_kind"] == CI95 and g["latency_p99_intended_ms"] == 14.5
    assert 10.0 < low <= 14.5 <= high < 60.0  # the median's interval, narrower than min-max


def test_overlapping_intervals_are_within_noise_and_disjoint_ones_apart() -> None:
    a = {"p": 100.0, "spread": {"p": [90.0, 110.0]}, "repeats": 3}
    b = {"p": 115.0, "spread": {"p": [105.0, 125.0]}, "repeats": 3}
    c = {"p": 150.0, "spread": {"p": [140.0, 160.0]}, "repeats": 3}
    assert not apart(a, b, "p") and apart(a, c, "p") and apart(c, b, "p")
    assert not apart({"p": 100.0}, {"p": 104.0}, "p") and apart({"p": 100.0}, {"p": 106.0}, "p")  # single runs: 5%


def test_no_best_inside_overlapping_repeats() -> None:
    rows = [_row(f"u__{alg}__memory__r{k}", alg, p) for alg, ps in
            (("sliding_log", (1057.0, 1080.0, 1065.0)), ("fixed_window", (1062.0, 1070.0, 1090.0)),
             ("adaptive", (500.0, 520.0, 510.0))) for k, p in enumerate(ps, 1)]
    (said,) = [a.sentence for a in answers(group(rows)) if a.key == "bounded_p99"]
    assert said.startswith("Best: adaptive, P99 510 ms (500 ms-520 ms)")
    assert "within noise of each other" in said and "worst" not in said


def test_a_repeated_simulation_names_its_folders_so_the_summary_groups_them(tmp_path: Path, capsys) -> None:
    campaign = tmp_path / "c.yaml"
    campaign.write_text(yaml.safe_dump({"name": "rep", "repeats": 2, "policy": {"limit": 10, "window_s": 1},
                                        "algorithms": ["fixed_window"], "scenarios": ["boundary_burst"]}))
    out = tmp_path / "out"
    assert main(["simulate", "--campaign", str(campaign), "--out", str(out), "--wide", "--no-charts"]) == 0
    assert sorted(p.name for p in (out / "runs").iterdir()) == [
        "boundary_burst__fixed_window__memory__r1", "boundary_burst__fixed_window__memory__r2"]
    assert main(["simulate", "--campaign", str(campaign), "--out", str(tmp_path / "o3"), "--repeats", "3", "--no-charts"]) == 0
    assert len(list((tmp_path / "o3" / "runs").iterdir())) == 3


def test_a_repeats_seed_is_in_its_run_json_and_the_analysis_groups_by_it(tmp_path: Path) -> None:
    """run.json (and campaign.yaml's runs) record each repeat's seed and k; the grouped row lists
    the seeds of its repeats, read back from run.json; a seed that is not a whole number leaves
    the run out, named."""
    campaign = tmp_path / "c.yaml"
    campaign.write_text(yaml.safe_dump({"name": "rep", "seed": 7, "repeats": 2, "policy": {"limit": 10, "window_s": 1},
                                        "algorithms": ["fixed_window"], "scenarios": ["boundary_burst"]}))
    out = tmp_path / "out"
    assert main(["simulate", "--campaign", str(campaign), "--out", str(out), "--no-charts"]) == 0
    runs = out / "runs"
    recorded = [json.loads((runs / f"boundary_burst__fixed_window__memory__r{k}" / "run.json").read_text()) for k in (1, 2)]
    assert [(r["seed"], r["repeat"]) for r in recorded] == [(7, 1), (8, 2)]
    config = yaml.safe_load((out / "campaign.yaml").read_text())["runs"]
    assert [config[f"boundary_burst__fixed_window__memory__r{k}"]["seed"] for k in (1, 2)] == [7, 8]
    rows = analyze(load_results(out)).rows
    assert sorted((r["seed"], r["repeat"]) for r in rows) == [(7, 1), (8, 2)]
    [merged] = group(rows)
    assert merged["repeats"] == 2 and merged["seeds"] == [7, 8]
    info = runs / "boundary_burst__fixed_window__memory__r2" / "run.json"
    info.write_text(json.dumps({**recorded[1], "seed": 70}))  # the seed is read from run.json, not derived
    assert group(analyze(load_results(out)).rows)[0]["seeds"] == [7, 70]
    info.write_text(json.dumps({**recorded[1], "seed": "eight"}))
    assert "seed must be a whole number" in load_results(out).left_out[0].reason


@pytest.mark.parametrize("args", [["--repeats", "0"], ["--repeats", "-1"]])
def test_a_repeat_count_below_one_is_refused(tmp_path: Path, capsys, args) -> None:
    out = tmp_path / "never"
    assert main(["simulate", "--scenario", "steady", "--out", str(out), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --repeats must be between 1 and 100") and len(err.splitlines()) == 1
    assert not out.exists()
    campaign = tmp_path / "c.yaml"
    campaign.write_text(yaml.safe_dump({"name": "rep", "repeats": 0, "policy": {"limit": 10, "window_s": 1},
                                        "algorithms": ["fixed_window"], "scenarios": ["steady"]}))
    assert main(["run", str(campaign), "--out", str(out)]) == 2
    assert "repeats: Input should be greater than or equal to 1" in capsys.readouterr().err
