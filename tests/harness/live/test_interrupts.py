"""Interrupts never break a record: real signals to a real ``run_bench.py run``, a second one 0.3 s
after the first and more every 0.1 s while it stops (one used to land in the runner's clean-up:
the run had no run.json and the report showed it as a 0-request run at 0.00x)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from analysis.loader import load_results
from analysis.report import build_report, render_md

pytestmark = pytest.mark.process  # every test here starts processes

ROOT = Path(__file__).resolve().parents[3]
SMOKE = ROOT / "campaigns" / "smoke.yaml"


def _serving(pid: int) -> bool:
    """A target is up under the runner (the second run is on)."""
    try:
        return any("targets" in " ".join(p.cmdline()) for p in psutil.Process(pid).children(recursive=True))
    except psutil.Error:
        return False


def test_any_sequence_of_signals_leaves_every_run_complete_or_marked_interrupted(tmp_path):
    out = tmp_path / "res"
    proc = subprocess.Popen([sys.executable, "run_bench.py", "run", str(SMOKE), "--out", str(out)], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    first = out / "runs" / "boundary_burst__fixed_window__memory" / "run.json"
    second = out / "runs" / "page_load_burst__token_bucket__memory"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and not (first.exists() and (second / "plan.json").exists() and _serving(proc.pid)):
        time.sleep(0.05)
    assert first.exists() and _serving(proc.pid)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.3)
    for i in range(40):  # while it stops its children, records the run and writes the report
        if proc.poll() is not None:
            break
        proc.send_signal((signal.SIGINT, signal.SIGTERM)[i % 2])
        time.sleep(0.1)
    _, err = proc.communicate(timeout=90)
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err, err[-2000:]
    runs = sorted(p for p in (out / "runs").iterdir() if p.is_dir())
    statuses = {p.name: json.loads((p / "run.json").read_text())["status"] for p in runs}  # every run has its record
    assert statuses[first.parent.name] == "ok" and statuses[second.name] == "interrupted", statuses
    assert set(statuses.values()) <= {"ok", "interrupted"}
    results = load_results(out)
    assert [r.name for r in results.runs] == [n for n, s in statuses.items() if s == "ok"]
    assert {x.name for x in results.left_out} == {n for n, s in statuses.items() if s == "interrupted"}
    report = build_report(out)  # as the command's summary (which a further signal may cut short) or `report` writes it
    assert {r["run"] for r in report.rows} == {n for n, s in statuses.items() if s == "ok"}  # never a 0-request row
    assert f"run left out: {second.name}: run marked interrupted" in render_md(report)


def test_a_live_run_without_its_record_is_left_out_as_interrupted(tmp_path):
    root = tmp_path / "res"
    (root / "runs" / "boundary_burst__fixed_window__memory").mkdir(parents=True)
    (root / "campaign.yaml").write_text("name: x\npolicy: {limit: 10, window_s: 1}\nruns: [boundary_burst__fixed_window__memory]\n")
    results = load_results(root)
    assert results.runs == [] and [x.reason for x in results.left_out] == ["run interrupted: no run.json (stopped before it was recorded)"]
