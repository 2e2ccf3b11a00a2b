"""The runners call their hooks through RunnerEvents: each hook optional, called in run order."""

from __future__ import annotations

from harness.events import RunnerEvents
from harness.sim.runner import execute, make_plan
from targets.algorithms import Policy


def test_simulate_reports_every_run_done_in_order_with_its_row():
    plan = make_plan(name="t", policy=Policy(10, 1.0), algorithms=["fixed_window", "token_bucket"],
                     scenarios=["boundary_burst"], traces=[], algorithm_params=[], scenario_params=[], seed=1)
    seen = []
    rows = execute(plan, None, RunnerEvents(run_done=lambda i, n, run, row: seen.append((i, n, run.algorithm, row))))
    assert [(i, n, a) for i, n, a, _ in seen] == [(1, 2, "fixed_window"), (2, 2, "token_bucket")]
    assert [row for *_, row in seen] == rows


def test_no_listener_is_no_call():
    events: RunnerEvents[str] = RunnerEvents()
    events.started(1, 1, "run")
    events.counted({})
    events.done(1, 1, "run", {})
    assert not events.wants_counters and RunnerEvents(counters=print).wants_counters
