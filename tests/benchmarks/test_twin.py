"""bench twin's pure parts: the virtual twin of a live campaign, its short variant, and the
pairing of live and virtual rows with their ratios."""

from __future__ import annotations

from pathlib import Path

from benchmarks.twin import goals, scaled, side_by_side, virtual_twin
from harness.campaign.live import load_campaign

CAMPAIGNS = Path(__file__).parents[2] / "campaigns"


def test_the_virtual_twin_has_the_live_entries_policy_and_downstream():
    live = scaled(load_campaign(CAMPAIGNS / "default.yaml"), "unhealthy_downstream", 0.5)
    twin = virtual_twin(live)
    [entry] = twin.scenarios
    assert entry.name == "unhealthy_downstream" and entry.params["duration_s"] == 2.0  # 4 s halved, its phases too
    assert (entry.params["degrade_at_s"], entry.params["recover_at_s"]) == (0.75, 1.5)
    assert entry.policy is not None and entry.policy.burst == 32
    assert (twin.downstream.concurrency, twin.downstream.median_ms) == (16, 10)
    assert twin.algorithms == live.algorithms and twin.system.processes == live.processes


def test_rows_pair_by_run_with_virtual_over_live_ratios():
    live = [{"scenario": "ramp", "algorithm": "none", "latency_p99_intended_ms": 200.0, "admitted": 100, "rejected": 0,
             "ramp_sustained_rps": 730.0, "goodput_in_bound_rps": 120.0},
            {"scenario": "ramp", "algorithm": "adaptive", "latency_p99_intended_ms": 40.0, "admitted": 50, "rejected": 50}]
    virtual = [{"scenario": "ramp", "algorithm": "none", "latency_p99_intended_ms": 150.0, "admitted": 100, "rejected": 0,
                "ramp_sustained_rps": 790.0, "goodput_in_bound_rps": 90.0}]
    [row] = side_by_side(live, virtual)
    assert row["run"] == "ramp x none"
    assert row["P99 ms"] == (200.0, 150.0, 0.75) and row["admitted"] == (100, 100, 1.0)
    assert row["rejected"] == (0, 0, None) and row["sustained /s"] == (730.0, 790.0, 1.082)
    assert row["goodput /s"] == (120.0, 90.0, 0.75)


def test_the_twin_of_an_entry_behind_a_gateway_keeps_its_bucket():
    live = scaled(load_campaign(CAMPAIGNS / "adaptive.yaml"), "downstream_breaks-overload-vegas-bucket", 1.0)
    [entry] = virtual_twin(live).scenarios
    assert entry.gateway is not None and (entry.gateway.rate, entry.gateway.burst) == (300, 16)


def run(algorithm: str = "fixed_window", p99: float = 100.0, admitted: int = 1000, rejected: int = 0,
        requests: int = 1000, **extra) -> dict:
    return {"scenario": "ramp", "algorithm": algorithm, "latency_p99_intended_ms": p99, "admitted": admitted,
            "rejected": rejected, "requests": requests, **extra}


RAMP = {"start_rps": 100, "end_rps": 2500, "duration_s": 40.0}
"""Bins of 1 s over a ramp of 60/s a second: one bin is 60/s of offered rate."""


def test_goals_judge_p99_and_admissions_above_20_ms_and_adaptive_refusals():
    assert goals(run(p99=100), run(p99=124.9, admitted=1019)) == "met"
    assert goals(run(p99=100), run(p99=126, admitted=1021)) == "P99 +26.0%; admitted +2.1%"
    assert goals(run(p99=19), run(p99=40, admitted=900)) == "-"  # the stack's own latency: no goal
    adaptive = run("adaptive", p99=10, admitted=600, rejected=400)
    assert goals(adaptive, run("adaptive", p99=10, admitted=560, rejected=442)) == "rejected +10.5% (400 / 442)"


def test_a_ramp_stopped_on_p99_is_judged_within_one_bin_and_one_stopped_late_is_not():
    live = run(ramp_stopped_by="p99", ramp_sustained_rps=730.0, scenario_params=RAMP)
    assert goals(live, run(ramp_sustained_rps=790.0)) == "met"
    assert goals(live, run(ramp_sustained_rps=850.0)) == "sustained +120/s"
    late = dict(live, ramp_stopped_by="late")
    assert goals(late, run(ramp_sustained_rps=2470.0)) == "met"


def test_a_live_run_cut_short_is_judged_on_its_ramp_alone():
    live = run(p99=7000, admitted=500, requests=500, ramp_stopped_by="p99", ramp_sustained_rps=670.0,
               scenario_params=RAMP)
    assert goals(live, run(p99=40000, admitted=1000, ramp_sustained_rps=670.0)) == "live sent 50% of the plan"
