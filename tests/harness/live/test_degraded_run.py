"""A run that lost its Redis says so: the runner's own redis-server is killed while a short
redis-shared run is on (as an outage does, but unplanned: no scenario asked for it), and the run is
marked degraded (status ``degraded``, not ``ok``), with the fallback's share and time span, in run.json, the terminal line, the
summary row and the report's warnings, and left out of the report's answers."""

from __future__ import annotations

import io
import json
import os
import signal

import pytest
import yaml
from rich.console import Console

from analysis.analyze import analyze
from analysis.answers import _of
from analysis.loader import load_results
from harness.campaign.live import load_campaign
from harness.cli.progress import RunProgress
from harness.events import RunnerEvents
from harness.live.plan import plan_runs
from harness.live.runner import LiveRunner

pytestmark = pytest.mark.process  # every test here starts processes

CAMPAIGN = {
    "name": "lost-redis", "seed": 1, "policy": {"limit": 50, "window_s": 1}, "algorithms": ["fixed_window"],
    "stores": ["redis-shared"],
    "scenarios": [{"name": "unhealthy_downstream",
                   "params": {"rate_rps": 60, "clients": 2, "degrade_at_s": 2, "recover_at_s": 3, "duration_s": 3, "factor": 1}}],
    "scale": {"workers": 2, "lead_s": 2.0, "drain_s": 1.0},
    "downstream": {"concurrency": 8, "median_ms": 1, "sigma": 0.1},
}


def test_a_run_whose_redis_died_is_marked_degraded_everywhere(tmp_path, monkeypatch):
    monkeypatch.delenv("REDIS_URL", raising=False)  # the runner's own redis-server, which this test kills
    path = tmp_path / "campaign.yaml"
    path.write_text(yaml.safe_dump(CAMPAIGN))
    campaign = load_campaign(path)
    terminal = io.StringIO()
    progress = RunProgress(Console(file=terminal, width=400))
    runner: LiveRunner

    def counters(seen: dict) -> None:
        progress.counters(seen)
        redis = runner.redis
        by_redis = sum(limit.get("redis", {}).get("by_source", {}).get("redis", 0) for limit in seen.get("limits", {}).values())
        if by_redis >= 20 and redis is not None and redis.process is not None:  # decided by Redis, then lost
            os.killpg(redis.process.pid, signal.SIGKILL)

    events, loads = progress.events, []
    runner = LiveRunner(campaign, tmp_path / "res", events=RunnerEvents(run_start=events.run_start, counters=counters,
                                                                         load=loads.append, run_done=events.run_done))
    [info] = runner.run_all(plan_runs(campaign))
    assert info["status"] == "degraded", info.get("error")  # complete, but not redis-shared's: run exits 1
    run_dir = tmp_path / "res" / "runs" / "unhealthy_downstream__fixed_window__redis-shared"
    record = json.loads((run_dir / "run.json").read_text())
    # the live view heard the generator's side, its late sends summed by the Locust master from its two
    # workers' reports: never more than the run's own count once the client logs were written
    heard = [f for f in loads if f.get("requests") is not None]
    assert heard and all(0 <= f["late_groups"] <= record["late_groups"] for f in heard), loads[-3:]
    degraded = record["degraded"]
    assert record["degraded_reasons"][0] == f"{degraded['share']:.1%} of its decisions came from a fallback, not redis-shared"
    assert 0 < degraded["share"] <= 1 and degraded["sources"].get("fallback", 0) > 0  # < 1 unless Redis was slow to answer at first
    assert degraded["end_t"] > degraded["start_t"]
    line = terminal.getvalue()
    assert "degraded" in line and "came from a fallback, not redis-shared" in line, line
    analysis = analyze(load_results(tmp_path / "res"))
    [row] = analysis.rows
    assert row["degraded_share"] == degraded["share"]
    assert any("degraded" in w and run_dir.name in w for w in analysis.warnings)
    assert _of(analysis.rows, "unhealthy_downstream", "over_admission") == []  # never reported as the store's
