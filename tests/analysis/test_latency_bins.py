"""Short live runs (seconds long): latency bins sized from the run, lined up with the degraded
phase, and recovery time computed whenever the run has a tail after the phase."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from analysis.analyze import analyze
from analysis.latency import time_bin
from analysis.loader import load_results
from analysis.report import build_report
from contract.schema import CHARTS_DIR, SUMMARY_JSON

from .synth import T0, client_table, decisions_table, write_run

PHASE = (1.5, 3.0)  # s after the run's start


def short_run_folder(root: Path, seconds: float) -> Path:
    """200 req/s for ``seconds``: 10 ms, 300 ms in the degraded phase, 60 ms for the 0.5 s after
    it (the queue drains), then 10 ms again."""
    root.mkdir(parents=True)
    offset = np.arange(0.0, seconds, 0.005)
    t = T0 + offset
    ms = np.select([(offset >= PHASE[0]) & (offset < PHASE[1]), (offset >= PHASE[1]) & (offset < PHASE[1] + 0.5)],
                   [300.0, 60.0], 10.0)
    n = len(t)
    rid = [f"r{i}" for i in range(n)]
    key = np.array([f"user-{i % 5}" for i in range(n)])
    decisions = decisions_table(t, key, np.ones(n, dtype=bool), np.array(["legit"] * n), rid, "token_bucket")
    client = client_table(rid, t, t, t + ms / 1000.0, np.full(n, 200), np.ones(n))
    phase = {"name": "degraded", "start_t": T0 + PHASE[0], "end_t": T0 + PHASE[1]}
    write_run(root, "unhealthy_downstream", "token_bucket", decisions, client, {"phases": [phase]})
    return root


@pytest.mark.parametrize(("seconds", "phase", "width"), [(3.0, 1.5, 0.1), (6.0, 1.5, 0.25), (10.0, None, 0.25),
                                                          (30.0, 10.0, 1.0), (3600.0, None, 100.0)])
def test_bin_width_follows_the_run_length(seconds: float, phase: float | None, width: float) -> None:
    assert time_bin(seconds, phase) == width


def test_short_run_bins_line_up_with_the_phase_and_recovery_is_measured(tmp_path: Path) -> None:
    root = short_run_folder(tmp_path / "short", 6.0)
    build_report(root)
    row = json.loads((root / SUMMARY_JSON).read_text())["runs"][0]
    assert row["time_to_recover_s"] == pytest.approx(0.5)  # 60 ms > 1.5 x 10 ms until 3.5 s
    a = analyze(load_results(root)).runs[0]
    assert a.latency_bin_s == 0.25
    edges = np.append(a.latency_series["t"].to_numpy(), a.latency_series["t"].iloc[-1] + a.latency_bin_s)
    assert np.isclose(edges, PHASE[0]).any() and np.isclose(edges, PHASE[1]).any()
    assert a.degraded == pytest.approx(PHASE)
    assert (root / CHARTS_DIR / "latency_over_time-unhealthy_downstream.png").stat().st_size > 0


def test_recovery_is_null_when_the_run_ends_before_latency_settles(tmp_path: Path) -> None:
    root = short_run_folder(tmp_path / "cut", 3.4)  # ends while the queue still drains
    assert analyze(load_results(root)).runs[0].row["time_to_recover_s"] is None
