"""A side ready only after the plan's first send (a busy machine: the targets' start-up took
longer than the lead) is not measured as if it had listened: the run starts again from an empty
folder with a lead that covers the start-up, and says so; late twice, the run fails, saying so.

The lateness is made, not waited for: the suite side's start is held past the plan's first send
(on the first attempt only, or on every attempt)."""

from __future__ import annotations

import time

import pandas as pd
import pytest

from harness.campaign.live import Campaign
from harness.live.plan import plan_runs
from harness.live.runner import LiveRunner
from harness.live.sides.suite import SuiteSide
from tests.recorded import suite_model_agrees

pytestmark = pytest.mark.process  # every test here starts processes

TINY = {
    "name": "late", "policy": {"limit": 10, "window_s": 1}, "algorithms": ["fixed_window"],
    "scenarios": [{"name": "boundary_burst", "params": {"instant": 1, "boundaries": 1}}],
    "scale": {"workers": 1, "lead_s": 0.5, "drain_s": 0.5},
}


def _held(monkeypatch, runner: LiveRunner, times: int) -> list[float]:
    """SuiteSide.start held past the plan's first send on its first ``times`` calls; the leads it saw."""
    start, leads = SuiteSide.start, []

    def late_start(side: SuiteSide):
        leads.append(runner.lead_s)
        if len(leads) <= times:
            # past the plan's first send whatever the phase: the plan starts at the first whole
            # window (W = 1 s) at least one lead after Locust is launched, its first request 0.95 s
            # in; a hold of lead + 1 s was sometimes early enough to be on time
            time.sleep(runner.lead_s + 2.5)
        return start(side)

    monkeypatch.setattr(SuiteSide, "start", late_start)
    return leads


def test_a_late_side_is_started_again_with_a_lead_that_covers_it(tmp_path, monkeypatch):
    campaign = Campaign.model_validate(TINY)
    runner = LiveRunner(campaign, tmp_path / "res")
    runner.lead_s = 0.5  # the first run's default lead covers a slow start: make it short
    leads = _held(monkeypatch, runner, times=1)
    [info] = runner.run_all(plan_runs(campaign))
    assert info["status"] == "ok", info.get("error")
    assert len(leads) == 2 and leads[1] > leads[0] + 1.0  # the second attempt's lead covers the first's start-up
    assert info["started_again"].startswith("the side under test was ready ")
    assert "after the plan's first send" in info["started_again"] and "started again with a " in info["started_again"]
    run = tmp_path / "res" / "runs" / "boundary_burst__fixed_window__memory"
    client = pd.read_parquet(run / "client.parquet", filters=[("role", "==", "plan")])
    assert len(client) == info["planned_requests"] and (client["status"] != 0).all()  # every request met a listener
    suite_model_agrees(run)  # one attempt's decisions only, judged on the times the target recorded


def test_a_side_late_twice_fails_the_run_saying_so(tmp_path, monkeypatch):
    campaign = Campaign.model_validate(TINY)
    runner = LiveRunner(campaign, tmp_path / "res")
    runner.lead_s = 0.5
    _held(monkeypatch, runner, times=2)
    [info] = runner.run_all(plan_runs(campaign))
    assert info["status"] == "failed"
    assert "the side under test was ready " in info["error"] and ", even with a " in info["error"]
