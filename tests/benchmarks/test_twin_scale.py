"""``bench twin-scale``: the node's twin and the figures it compares, on hand-made tables."""

from __future__ import annotations

import pandas as pd
import pytest

from benchmarks.twin_scale import cores, node_twin, p99_only
from harness.campaign.live import Campaign


def test_the_twin_of_a_node_of_per_process_limiters_is_one_limiter_of_its_totals():
    live = Campaign.model_validate({
        "name": "c", "policy": {"limit": 1250, "window_s": 1, "burst": 40}, "algorithms": ["token_bucket"],
        "scenarios": [{"name": "ramp", "params": {"start_rps": 10, "end_rps": 20, "duration_s": 2, "clients": 4}}],
        "processes": 11, "downstream": {"concurrency": 20}, "scale": {"auto": True}})
    twin = node_twin(live, 129.0)
    assert (twin.policy.limit, twin.policy.burst, twin.downstream.concurrency) == (13_750, 440, 220)
    assert (twin.system.processes, twin.system.cpu_us) == (11, 129.0)


def test_the_sustained_rate_on_p99_alone_ignores_late_bins():
    bins = pd.DataFrame({"offered_rps": [10.0, 20.0, 30.0, 40.0], "p99_ms": [30.0, 40.0, 120.0, 50.0],
                         "late_share": [0.0, 0.5, 0.0, 0.0]})
    assert p99_only(bins, 100.0) == 20.0
    assert p99_only(bins, 200.0) == 40.0
    assert p99_only(bins.iloc[:0], 100.0) is None


def test_cores_sum_each_roles_processes_per_bin():
    cpu = pd.DataFrame({"t": [100.2, 100.7, 100.2, 100.7, 101.2, 101.4],
                        "process": ["locust", "locust", "target:a", "target:a", "target:a", "target:b"],
                        "role": ["generator", "generator", "target", "target", "target", "target"],
                        "cpu_percent": [40.0, 60.0, 80.0, 100.0, 50.0, 70.0]})
    got = cores(cpu, 100.0, 1.0)
    assert got.loc[0.0].to_dict() == pytest.approx({"generator_cores": 0.5, "target_cores": 0.9})
    assert got.loc[1.0].to_dict() == pytest.approx({"generator_cores": 0.0, "target_cores": 1.2})
