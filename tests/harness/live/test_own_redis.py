"""The runner's own redis-server recovers: killed from outside between two runs of a campaign,
it is started again before the next run, which says so in its run.json and its terminal line."""

from __future__ import annotations

import io
import json
import os
import signal

import pytest
from rich.console import Console

from harness.campaign.live import Campaign
from harness.cli.progress import RunProgress
from harness.events import RunnerEvents
from harness.live.plan import plan_runs
from harness.live.runner import LiveRunner

pytestmark = pytest.mark.process  # every test here starts processes

TINY = {
    "name": "own-redis", "policy": {"limit": 10, "window_s": 1}, "algorithms": ["fixed_window", "token_bucket"],
    "stores": ["redis-shared"], "scenarios": [{"name": "boundary_burst", "params": {"instant": 1, "boundaries": 1}}],
    "scale": {"workers": 1, "lead_s": 2.0, "drain_s": 0.5},
}


def test_a_killed_own_redis_is_restarted_before_the_next_run(tmp_path, monkeypatch):
    monkeypatch.delenv("REDIS_URL", raising=False)  # the runner's own redis-server, started on first use
    campaign = Campaign.model_validate(TINY)
    killed: list[int] = []

    def kill_own_redis(i: int, n: int, run: object, info: dict) -> None:
        if i == 1:  # between the two runs, from outside the runner
            assert runner.redis is not None and runner.redis.process is not None
            killed.append(runner.redis.port)
            os.kill(runner.redis.process.pid, signal.SIGKILL)
            runner.redis.process.wait(10)

    runner = LiveRunner(campaign, tmp_path / "res", events=RunnerEvents(run_done=kill_own_redis))
    first, second = runner.run_all(plan_runs(campaign))
    assert killed and first["status"] == "ok" and "redis_restarted" not in first
    assert second["status"] == "ok", second.get("error")
    assert f"port {killed[0]} had exited (-9): restarted" in second["redis_restarted"]
    on_disk = json.loads((tmp_path / "res" / "runs" / "boundary_burst__token_bucket__redis-shared" / "run.json").read_text())
    assert on_disk["redis_restarted"] == second["redis_restarted"] and on_disk["sent"] == second["planned_requests"]


def test_the_run_line_says_the_own_redis_was_restarted():
    out = io.StringIO()
    progress = RunProgress(Console(file=out, width=200))
    progress.start(2, 2, "boundary_burst__token_bucket__redis-shared")
    progress.done({"status": "ok", "sent": 20, "redis_restarted": "the runner's own redis-server on port 1 had exited (-9)"})
    line, = out.getvalue().splitlines()
    assert line.startswith("run 2/2 boundary_burst__token_bucket__redis-shared  ok  20 sent")
    assert line.endswith("the runner's own redis-server on port 1 had exited (-9)")
