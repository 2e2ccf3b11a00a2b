"""Bad input: not a results folder, a truncated or missing Parquet, a failed run: a clear message,
and a report for the runs that are whole, naming those left out."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from analysis.analyze import analyze
from analysis.loader import ResultsError, load_results
from analysis.report import build_report
from contract import decision_file
from contract.schema import DECISIONS_FILE, REPORT_HTML, RUN_FILE
from harness.cli.main import main


def test_not_a_results_folder(tmp_path: Path, capsys) -> None:
    with pytest.raises(ResultsError, match="not a results folder"):
        load_results(tmp_path)
    assert main(["report", str(tmp_path)]) == 2
    assert "is not a results folder" in capsys.readouterr().err
    assert main(["compare", str(tmp_path), str(tmp_path / "nope")]) == 2


def test_a_folder_without_runs_is_refused_and_nothing_written(tmp_path: Path, capsys) -> None:
    (tmp_path / "runs").mkdir()
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: {tmp_path} has no runs: runs/ holds no whole run (a campaign interrupted before its first run?)"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"]


def test_runs_of_one_scenario_under_two_policies_are_refused(sim_folder: Path, copy_of, capsys) -> None:
    root = copy_of(sim_folder)
    info_path = root / "runs" / "boundary_burst__sliding_log__memory" / RUN_FILE  # a virtual run's run.json
    info = json.loads(info_path.read_text())
    info_path.write_text(json.dumps({**info, "policy": {**info["policy"], "limit": 50}}))
    (root / "report.html").unlink(missing_ok=True)
    assert main(["report", str(root)]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("analysed ")]
    assert len(errors) == 1
    err = errors[0]
    assert err.startswith("error: scenario boundary_burst holds runs of different policies (")
    assert "L 50 per 60 s" in err and "L 100 per 60 s" in err
    assert not (root / "report.html").exists()


def test_broken_runs_are_left_out_and_named(sim_folder: Path, copy_of) -> None:
    root = copy_of(sim_folder)
    runs = root / "runs"
    truncated = runs / "boundary_burst__sliding_log__memory" / DECISIONS_FILE
    truncated.write_bytes(truncated.read_bytes()[: truncated.stat().st_size // 2])
    (runs / "boundary_burst__token_bucket__memory" / DECISIONS_FILE).unlink()
    failed = runs / "page_load_burst__sliding_log__memory"
    (failed / RUN_FILE).write_text(json.dumps({
        "status": "failed", "scenario": "page_load_burst", "algorithm": "sliding_log", "store": "memory",
        "policy": {"limit": 100, "window_s": 60, "burst": None}, "error": "Traceback...\nOSError: port 8001 in use\n"}))
    (runs / "not-a-run").mkdir()
    (runs / "not-a-run" / DECISIONS_FILE).write_bytes(b"")

    report = build_report(root)

    reasons = {x.name: x.reason for x in report.analysis.left_out}
    assert "truncated or corrupt" in reasons["boundary_burst__sliding_log__memory"]
    assert "missing" in reasons["boundary_burst__token_bucket__memory"]
    assert reasons["page_load_burst__sliding_log__memory"] == "run marked failed: OSError: port 8001 in use"
    assert "<scenario>__<algorithm>__<store>" in reasons["not-a-run"]
    assert len(report.rows) == 3  # the whole ones of six
    html = (root / REPORT_HTML).read_text()
    for name in reasons:
        assert f"run left out: {name}" in html


def test_a_log_left_in_parts_by_a_killed_target_is_analysed_as_its_file(sim_folder: Path, copy_of) -> None:
    root = copy_of(sim_folder)
    path = root / "runs" / "boundary_burst__sliding_log__memory" / DECISIONS_FILE
    table = pq.read_table(path)
    decision_file.parts_dir(path).mkdir()
    third = len(table) // 3
    for number, start in enumerate((0, third, 2 * third), 1):
        decision_file.write_part(path, number, table.slice(start, third if number < 3 else None))
    path.unlink()

    parted, whole = analyze(load_results(root)), analyze(load_results(sim_folder))

    row = {r["run"]: r for r in parted.rows}["boundary_burst__sliding_log__memory"]
    assert row == {r["run"]: r for r in whole.rows}["boundary_burst__sliding_log__memory"]
    assert any("killed" in w for w in parted.warnings)
