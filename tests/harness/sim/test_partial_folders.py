"""Results folders appear whole or not at all: a simulated run and a simulation's folder are
written under ``.<name>.partial`` and renamed when complete; a campaign killed with SIGKILL leaves
its partial folder, and ``report`` on it names the planned, finished, incomplete and missing runs
and counts only the finished ones."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from analysis.loader import load_results
from contract.folder import partial_path
from harness.cli.main import main

ROOT = Path(__file__).resolve().parents[3]
CAMPAIGN = """name: slow
policy: {limit: 100, window_s: 1}
algorithms: [fixed_window, token_bucket, sliding_log, gcra, leaky_bucket]
scenarios:
  - {name: steady, params: {clients: 20, duration_s: 200}}
"""
ALGORITHMS = ("fixed_window", "token_bucket", "sliding_log", "gcra", "leaky_bucket")


def _planned() -> list[str]:
    return [f"steady__{a}__memory" for a in ALGORITHMS]


def test_a_completed_campaign_has_its_own_name_and_no_partial_folder(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.yaml").write_text(CAMPAIGN.replace("clients: 20, duration_s: 200", "clients: 2, duration_s: 5"))
    assert main(["simulate", "--campaign", "c.yaml", "--out", "out"]) == 0
    assert sorted(p.name for p in (tmp_path / "out" / "runs").iterdir()) == sorted(_planned())
    assert not partial_path(tmp_path / "out").exists()
    progress = load_results(tmp_path / "out").progress
    assert progress is not None and progress.line() is None and progress.finished == tuple(sorted(_planned()))


def test_a_leftover_partial_folder_is_refused_not_mixed_in(tmp_path: Path, monkeypatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.yaml").write_text(CAMPAIGN)
    partial_path(tmp_path / "out").mkdir()
    assert main(["simulate", "--campaign", "c.yaml", "--out", "out"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "an interrupted earlier campaign's .out.partial is in the way" in err


@pytest.mark.process
def test_sigkill_of_a_campaign_then_report_names_planned_finished_incomplete_and_missing(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(CAMPAIGN)
    out, partial = tmp_path / "out", partial_path(tmp_path / "out")
    proc = subprocess.Popen([sys.executable, str(ROOT / "run_bench.py"), "simulate", "--campaign", "c.yaml", "--out", "out"],
                            cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:  # the first run whole, the second begun
            runs = list((partial / "runs").glob("*")) if (partial / "runs").is_dir() else []
            if any(not p.name.startswith(".") for p in runs) and any(p.name.startswith(".") for p in runs):
                break
            time.sleep(0.02)
        assert proc.poll() is None, "the campaign ended before it could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        proc.kill()
        proc.wait()
    assert not out.exists() and partial.is_dir()  # nothing under the final name
    progress = load_results(out).progress
    assert progress is not None and progress.interrupted
    assert progress.planned == tuple(_planned())
    # killed as the second run began: one finished and one incomplete, unless this process was kept
    # off the CPU meanwhile (a busy machine) and the campaign went further; counted from the folders
    finished, incomplete = len(progress.finished), len(progress.incomplete)
    assert 1 <= finished <= 4 and incomplete <= 1
    assert set(progress.finished) | set(progress.incomplete) | set(progress.missing) == set(_planned())
    assert len(progress.missing) == 5 - finished - incomplete

    report = subprocess.run([sys.executable, str(ROOT / "run_bench.py"), "report", str(out)], cwd=tmp_path,
                            capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert "Traceback" not in report.stderr
    assert f"analysed {finished}/{finished}:" in report.stderr and f"analysed {finished}/{finished + 1}" not in report.stderr
    line = next(w for w in report.stderr.splitlines() if "campaign interrupted" in w)
    named = f" ({progress.incomplete[0]})" if incomplete else ""
    missing = f" ({', '.join(progress.missing)})" if progress.missing else ""
    assert line == (f"warning: campaign interrupted: 5 runs planned, {finished} finished, {incomplete} incomplete{named} "
                    f"(not counted), {5 - finished - incomplete} missing{missing}")
    assert report.stdout.startswith(f"{finished} runs, ")
