"""A virtual run's folder is a live run's: client log, CPU samples and run.json, read by the one
analysis and report; bad input for the system model is refused before anything is written."""

from __future__ import annotations

import json

import numpy as np
import pytest

from analysis.analyze import analyze
from analysis.loader import load_results
from contract.schema import REPORT_MD, SUMMARY_JSON
from harness.cli.main import main
from tests.analysis.synth import T0, client_table, decisions_table, write_run


@pytest.fixture(scope="module")
def adaptive_folder(tmp_path_factory):
    out = tmp_path_factory.mktemp("virtual") / "res"
    assert main(["simulate", "--scenario", "unhealthy_downstream", "--algorithm", "adaptive", "--out", str(out)]) == 0
    return out


def test_simulated_adaptive_rejects_under_unhealthy_downstream_and_its_report_shows_p99(adaptive_folder):
    assert main(["report", str(adaptive_folder)]) == 0
    [row] = json.loads((adaptive_folder / SUMMARY_JSON).read_text())["runs"]
    assert row["kind"] == "virtual" and row["rejected"] > 0 and row["latency_p99_intended_ms"] > 0
    assert row["cpu_target_ms_per_1k"] > 0 and row["time_to_recover_s"] is not None
    assert "P99" in (adaptive_folder / REPORT_MD).read_text()


def test_a_virtual_and_a_live_run_go_through_the_same_report_code(adaptive_folder, tmp_path):
    """One folder, the virtual run beside a live-style one (the synthetic live folder's shape):
    both analysed by analyze_run, both with latency and CPU from their own logs."""
    import shutil
    root = tmp_path / "both"
    shutil.copytree(adaptive_folder, root)
    n = 200
    t = T0 + np.linspace(0, 4, n)
    key = np.array(["u"] * n, dtype=object)
    ids = np.arange(n).astype(str).tolist()
    write_run(root, "unhealthy_downstream", "fixed_window", decisions_table(t, key, np.ones(n, bool),
              np.array(["legit"] * n, dtype=object), ids, "fixed_window"),
              client_table(ids, t, t, t + 0.02, [200] * n, [1] * n))
    rows = {r["algorithm"]: r for r in analyze(load_results(root)).rows}
    assert rows["adaptive"]["kind"] == "virtual" and rows["fixed_window"]["kind"] == "live"
    assert all(r["latency_p99_intended_ms"] > 0 and r["cpu_target_ms_per_1k"] > 0 for r in rows.values())


@pytest.mark.parametrize(("value", "field"), [
    ("concurrency=0", "concurrency"), ("median_ms=-1", "median_ms"), ("processes=0", "processes"),
    ("one_way_us=-5", "one_way_us"), ("cpu_us=-1", "cpu_us"), ("slots=3", "slots"),
])
def test_a_system_it_cannot_honour_is_refused_in_one_line(tmp_path, capsys, value, field):
    out = tmp_path / "never"
    assert main(["simulate", "--scenario", "steady", "--algorithm", "token_bucket", "--system", value,
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and field in err and "Traceback" not in err
    assert not out.exists()


def test_a_run_beyond_the_memory_bound_is_refused(tmp_path, capsys, monkeypatch):
    import harness.sim.runner as runner
    monkeypatch.setattr(runner, "MAX_VIRTUAL_REQUESTS", 100)
    out = tmp_path / "never"
    assert main(["simulate", "--scenario", "steady", "--algorithm", "token_bucket", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "memory bound" in err and "duration_s" in err
    assert not out.exists()
