"""``processes:`` in a live campaign: it reaches each node's target config and run.json, says
whether the processes shared the limit, and makes the virtual twin of a memory node a fleet of
that many local limiters (which admit N x what one does)."""

from __future__ import annotations

import pytest

from contract.errors import BadInput
from harness.campaign.config_file import validate_model
from harness.campaign.live import Campaign
from harness.live.config import target_config
from harness.live.plan import plan_runs
from harness.live.runner import LiveRunner

BURST = {"size": 20}
"""2 L on each side of a window boundary: one limiter admits L of each half (2 L in a window),
two local limiters L each (4 L)."""


def campaign(**extra) -> Campaign:
    raw = {"name": "procs", "policy": {"limit": 10, "window_s": 1}, "algorithms": ["fixed_window"],
           "stores": ["memory", "redis-shared", "redis-local"], "processes": 2,
           "scenarios": [{"name": "boundary_burst", "params": BURST},
                         {"name": "boundary_burst", "label": "one", "processes": 1, "params": BURST}], **extra}
    return validate_model(Campaign, raw, "procs.yaml")


def test_processes_reach_the_target_config_and_say_who_shares_the_limit(tmp_path):
    runs = {r.name: r for r in plan_runs(campaign())}
    limiters = {name: (r.processes, r.limiters) for name, r in runs.items()}
    assert limiters == {
        "boundary_burst__fixed_window__memory": (2, "per-process"),
        "boundary_burst__fixed_window__redis-shared": (2, "shared"),
        "boundary_burst__fixed_window__redis-local": (2, "per-process"),
        "boundary_burst-one__fixed_window__memory": (1, "shared"),
        "boundary_burst-one__fixed_window__redis-shared": (1, "shared"),
        "boundary_burst-one__fixed_window__redis-local": (1, "shared"),
    }
    run = runs["boundary_burst__fixed_window__memory"]
    assert target_config(run, campaign(), 0.0, tmp_path)["processes"] == 2


def test_the_virtual_twin_of_a_memory_node_of_two_processes_is_two_local_limiters(tmp_path):
    runs = {r.name: r for r in plan_runs(campaign())}
    runner = LiveRunner(campaign(), tmp_path)
    two = runner._virtual(runs["boundary_burst__fixed_window__memory"])
    one = runner._virtual(runs["boundary_burst-one__fixed_window__memory"])
    assert runner._virtual(runs["boundary_burst__fixed_window__redis-shared"]) == one
    assert (one, two) == (2.0, 4.0)


def test_processes_under_target_is_refused():
    with pytest.raises(BadInput, match=r"target\.processes: set processes on the entry itself"):
        campaign(scenarios=[{"name": "boundary_burst", "target": {"processes": 2}}])
