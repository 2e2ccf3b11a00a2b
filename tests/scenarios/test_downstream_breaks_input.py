"""downstream_breaks refuses parameters that would end in a numpy error deep in the model (a NaN
spread, an infinite capacity, a rate no run can send): one line, exit 2, nothing written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("param, message", [
    ("sigma=-1", "sigma=-1.0: out of bounds, must be between 0 and 10,000"),
    ("load=1e15", "load=1000000000000000.0: out of bounds, must be > 0 and <= 10,000"),
    ("load=10000", "would send more than 10,000,000 requests"),  # in bounds, but 3.8 million a second
    ("median_ms=1e-300", "would send more than 10,000,000 requests"),
    ("median_ms=1e-320", "capacity (slots / mean service time) must be finite"),
    ("duration_s=1e12", "duration_s=1000000000000.0: out of bounds, must be > 0 and <= 2,678,400"),
    ("duration_s=2e6", "would send more than 10,000,000 requests"),
    ("slots=0.5", "slots='0.5': expected an integer"),
])
def test_out_of_range_downstream_is_refused_in_one_line(tmp_path, capsys, param, message):
    out = tmp_path / "never"
    code = main(["simulate", "--scenario", "downstream_breaks", "--scenario-param", param, "--algorithm", "adaptive",
                 "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and message in err and len(err.splitlines()) == 1 and not out.exists()


@pytest.mark.process
def test_a_nan_spread_exits_2_without_a_traceback():
    done = subprocess.run([sys.executable, "run_bench.py", "simulate", "--scenario", "downstream_breaks",
                           "--scenario-param", "sigma=nan", "--algorithm", "adaptive"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.strip() == "error: sigma='nan': expected a finite number"
