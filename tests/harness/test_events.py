"""The runners call their hooks through RunnerEvents: each hook optional, called in run order."""

from __future__ import annotations

from harness.events import RunnerEvents
from harness.sim.runner import execute, make_plan
from targets.algorithms import Policy


def test_simulate_reports_every_run_start_and_done_in_order_with_its_row():
    plan = make_plan(name="t", policy=Policy(10, 1.0), algorithms=["fixed_window", "token_bucket"],
                     scenarios=["boundary_burst"], traces=[], algorithm_params=[], scenario_params=[], seed=1)
    seen, started = [], []
    rows = execute(plan, None, RunnerEvents(run_start=lambda i, n, run: started.append((i, n, run.algorithm, len(seen))),
                                            run_done=lambda i, n, run, row: seen.append((i, n, run.algorithm, row))))
    assert [(i, n, a) for i, n, a, _ in seen] == [(1, 2, "fixed_window"), (2, 2, "token_bucket")]
    assert started == [(1, 2, "fixed_window", 0), (2, 2, "token_bucket", 1)]  # each before its run, after the one before
    assert [row for *_, row in seen] == rows


def test_no_listener_is_no_call():
    events: RunnerEvents[str] = RunnerEvents()
    events.started(1, 1, "run")
    events.counted({})
    events.done(1, 1, "run", {})
    assert not events.wants_counters and RunnerEvents(counters=print).wants_counters


def test_a_failing_listener_is_logged_once_per_hook_and_the_run_goes_on(caplog):
    """As Locust's EventHook.fire: a display bug never stops a campaign; every hook the same way."""
    plan = make_plan(name="t", policy=Policy(10, 1.0), algorithms=["fixed_window", "token_bucket"],
                     scenarios=["boundary_burst"], traces=[], algorithm_params=[], scenario_params=[], seed=1)
    calls = []

    def broken(*args):
        calls.append(args[0])
        raise RuntimeError("display bug")

    events = RunnerEvents(run_start=broken, counters=broken, run_done=broken)
    rows = execute(plan, None, events)
    events.started(1, 1, "again")
    events.counted({"x": 1})
    events.counted({"x": 2})
    assert len(rows) == 2 and calls == [1, 1, 2, 2, 1, {"x": 1}, {"x": 2}]  # each run's start and end, then by hand
    failed = [r for r in caplog.records if "listener failed" in r.getMessage()]
    assert sorted(r.args[0] for r in failed) == ["counters", "run_done", "run_start"]
