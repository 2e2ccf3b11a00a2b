"""`run_bench.py simulate` and `list`: the issue's acceptance checks, results folder, bad input."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from contract.schema import DECISION_SCHEMA
from harness.cli.main import main
from targets.algorithms import ALGORITHMS

ROOT = Path(__file__).resolve().parents[3]


def simulate_json(capsys, *args: str) -> dict[str, dict]:
    assert main(["simulate", *args, "--json", "-"]) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    return {r["algorithm"]: r for r in runs}


def test_boundary_burst_over_admission(capsys):
    runs = simulate_json(capsys, "--scenario", "boundary_burst", "--limit", "100", "--window", "60")
    assert 1.9 <= runs["fixed_window"]["over_admission"] <= 2.0
    assert runs["sliding_log"]["over_admission"] <= 1.0
    assert runs["sliding_window_counter"]["over_admission"] <= 1.05
    burst = runs["token_bucket"]["burst"]
    for name in ("token_bucket", "gcra"):
        assert runs[name]["over_admission"] <= 1 + burst / 100
    assert runs["sliding_log"]["false_admits"] == runs["sliding_log"]["false_rejects"] == 0
    assert runs["fixed_window"]["false_admits"] == 300  # the 2nd half of each of 3 bursts


def test_adversarial_drip_shows_the_counters_real_worst_case(capsys):
    runs = simulate_json(capsys, "--scenario", "adversarial_drip", "--algorithm", "sliding_window_counter",
                         "--algorithm", "sliding_log")
    assert runs["sliding_window_counter"]["over_admission"] > 1.5
    assert runs["sliding_log"]["over_admission"] == 1.0


def test_page_loads_fit_a_burst_of_8_but_not_a_strict_per_second_log(capsys):
    bucket = simulate_json(capsys, "--scenario", "page_load_burst", "--algorithm", "token_bucket",
                           "--limit", "100", "--window", "60", "--burst", "8")["token_bucket"]
    assert bucket["legit_requests"] > 1000
    assert bucket["rejected_legit"] == 0
    assert bucket["rejected_abusive"] > 0
    # the same long-run rate as a strict per-second sliding log: 100/60 per second
    strict = simulate_json(capsys, "--scenario", "page_load_burst", "--algorithm", "sliding_log",
                           "--limit", str(100 / 60), "--window", "1", "--scenario-param", "duration_s=300")["sliding_log"]
    assert strict["legit_requests"] == bucket["legit_requests"]
    assert strict["rejected_legit"] > 0


def test_same_seed_same_numbers(capsys):
    args = ("--scenario", "page_load_burst", "--scenario", "cost_mix", "--algorithm", "gcra", "--seed", "7")
    first = json.loads((main(["simulate", *args, "--json", "-"]), capsys.readouterr().out)[1])
    second = json.loads((main(["simulate", *args, "--json", "-"]), capsys.readouterr().out)[1])
    for a, b in zip(first["runs"], second["runs"]):
        a.pop("wall_s"), b.pop("wall_s")
        assert a == b


def test_results_folder_layout(tmp_path, capsys):
    out = tmp_path / "res"
    assert main(["simulate", "--scenario", "boundary_burst", "--algorithm", "fixed_window",
                 "--algorithm", "token_bucket", "--out", str(out), "--json", str(tmp_path / "s.json")]) == 0
    assert (out / "campaign.yaml").is_file()
    for name in ("boundary_burst__fixed_window__memory", "boundary_burst__token_bucket__memory"):
        table = pq.read_table(out / "runs" / name / "decisions.parquet")
        assert table.schema.equals(DECISION_SCHEMA)
        assert table.num_rows == 600
    summary = json.loads((out / "summary.json").read_text())
    assert summary == json.loads((tmp_path / "s.json").read_text())
    assert (out / "summary.csv").read_text().count("\n") == 3
    assert not list(out.rglob("*.tmp"))


def test_trace_file(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # its results folder is made under ./results
    trace = tmp_path / "access.csv"
    rows = ["t,key,cost,client_class"] + [f"{i * 0.01},k{i % 2},1,legit" for i in range(300)]
    trace.write_text("\n".join(rows) + "\n")
    runs = simulate_json(capsys, "--trace", str(trace), "--algorithm", "fixed_window", "--limit", "10", "--window", "1")
    row = runs["fixed_window"]
    assert row["scenario"] == "access"  # named after the file
    assert row["requests"] == 300
    assert row["admitted"] == 60  # 2 keys x 10 per second x 3 seconds


def test_a_trace_run_is_a_results_folder_with_its_report_and_who_got_the_429s(tmp_path, capsys, monkeypatch):
    """Without --out: results/trace-<file>-<UTC time>/ with the report, charts, and keys.csv
    sorted by refusals (worst window: the most admitted in any W, by hand below)."""
    monkeypatch.chdir(tmp_path)
    trace = tmp_path / "trace.csv"
    # alice: 4 in the first second, 4 more at 5.0-5.3; bob: 1; mallory: 12 at once at t = 2
    rows = [(0.1 * i, "alice") for i in range(4)] + [(5.0 + 0.1 * i, "alice") for i in range(4)] + [(3.0, "bob")]
    rows += [(2.0, "mallory")] * 12
    trace.write_text("t,key\n" + "".join(f"{t:.1f},{k}\n" for t, k in sorted(rows)))
    assert main(["simulate", "--trace", str(trace), "--algorithm", "sliding_log", "--limit", "5", "--window", "10"]) == 0
    [folder] = (tmp_path / "results").iterdir()
    assert re.fullmatch(r"trace-trace-\d{8}T\d{6}Z", folder.name)
    assert [p.name for p in (folder / "runs").iterdir()] == ["trace__sliding_log__memory"]  # not trace-trace
    for name in ("report.html", "report.md", "summary.json", "charts/over_admission.png"):
        assert (folder / name).is_file(), name
    keys = pd.read_csv(folder / "keys.csv")
    assert keys.to_dict("records") == [  # sliding log, 5 per 10 s: mallory 5 of 12; alice 5 of 8 (3 refused at 5.0-5.2)
        {"run": "trace__sliding_log__memory", "key": "mallory", "requests": 12, "refused": 7, "worst_window": 5.0},
        {"run": "trace__sliding_log__memory", "key": "alice", "requests": 8, "refused": 3, "worst_window": 5.0},
        {"run": "trace__sliding_log__memory", "key": "bob", "requests": 1, "refused": 0, "worst_window": 1.0}]
    report = (folder / "report.md").read_text()
    assert "## Per key" in report and "| mallory | 12 | 7 | 1.00 |" in report
    assert f"report: {Path('results') / folder.name / 'report.html'}" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--scenario", "steady", "--algorithm", "bogus"], "unknown algorithm 'bogus'; choose from: fixed_window"),
        (["--scenario", "nope"], "unknown scenario 'nope'; choose from: steady"),
        (["--scenario", "steady", "--limit", "0"], "limit must be a positive number"),
        (["--scenario", "steady", "--window", "-5"], "window_s must be a positive number"),
        (["--scenario", "cost_mix", "--algorithm", "token_bucket", "--burst", "10"],
         "sends requests of cost 20 but token_bucket can never admit more than 10"),
        (["--scenario", "steady", "--param", "capacity"], "malformed --param 'capacity'"),
        (["--scenario", "steady", "--param", "zzz=1"], "unknown --param 'zzz'"),
        (["--scenario", "steady", "--scenario-param", "clients=0"], "clients=0: out of bounds, must be between 1 and 100,000"),
        (["--trace", "/nonexistent.csv"], "no such file"),
        ([], "give --scenario NAME or --trace FILE"),
    ],
)
def test_bad_input_one_line_exit_2_nothing_written(tmp_path, capsys, args, message):
    out = tmp_path / "never"
    assert main(["simulate", *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err
    assert len(err.splitlines()) == 1
    assert not out.exists()


def test_bad_trace_columns(tmp_path, capsys):
    trace = tmp_path / "bad.csv"
    trace.write_text("time,who\n1,a\n")
    assert main(["simulate", "--trace", str(trace)]) == 2
    assert "missing column(s) t, key" in capsys.readouterr().err


def test_bad_campaign_names_the_field(tmp_path, capsys):
    bad = tmp_path / "c.yaml"
    bad.write_text("name: x\npolicy: {limit: 10, window_s: 1, burts: 3}\nalgorithms: [all]\nscenarios: [steady]\n")
    assert main(["simulate", "--campaign", str(bad)]) == 2
    assert "policy.burts: unknown field (did you mean 'burst'?); valid: limit, window_s, burst" in capsys.readouterr().err


@pytest.mark.process
def test_list_names_everything():
    out = subprocess.run([sys.executable, "run_bench.py", "list"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for name in ("fixed_window", "sliding_window_ring", "gcra", "concurrency", "boundary_burst",
                 "adversarial_drip", "cost_mix", "--trace FILE", "memory", "nginx"):
        assert name in out


@pytest.mark.process
def test_default_campaign_runs_end_to_end(tmp_path):
    """What `make simulate` runs, through the real entry point: the results folder, report and
    summary (answers first) that `run` gives."""
    out = tmp_path / "default"
    proc = subprocess.run([sys.executable, "run_bench.py", "simulate", "--campaign", "campaigns/simulate.yaml",
                           "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads((out / "summary.json").read_text())["runs"]
    assert len(rows) == 5 * len(ALGORITHMS)
    assert len(list((out / "runs").iterdir())) == len(rows)
    for name in ("report.html", "report.md", "summary.csv", "charts/over_admission.png"):  # the folder `run` writes
        assert (out / name).is_file(), name
    said = " ".join(proc.stdout.split())
    assert said.index("how much gets through at a window edge?") < said.index("virtual campaign summary")
    assert f"report: {out / 'report.html'}" in said


def test_a_trace_run_is_named_after_its_file_never_as_a_scenario():
    from scenarios import SCENARIOS
    from scenarios.trace_file import trace_run_name

    assert trace_run_name("logs/trace.csv", SCENARIOS) == "trace"
    assert trace_run_name("access.log.gz", SCENARIOS) == "access"
    assert trace_run_name("my  log__2.csv", SCENARIOS) == "my-log_2"  # a run folder's name keeps its three parts
    assert trace_run_name("ramp-2.csv", SCENARIOS) == "trace-ramp-2"  # never read as the ramp scenario
