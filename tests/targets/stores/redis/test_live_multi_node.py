"""The live campaign on K target nodes sharing the runner's own redis-server: the physics of
multi_node (local limits admit about K x L with round-robin, limit/N cuts a sticky skewed client
below L, leased stays within one batch per node of L, a node joins mid-run) and store_failure
(Redis stopped and restarted: every request answered, the outage window in run.json)."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
import yaml

from harness.campaign.live import load_campaign
from harness.live.plan import plan_runs
from harness.live.runner import LiveRunner

pytestmark = pytest.mark.process  # every test here starts processes

L, K, BATCH = 20, 3, 5
CAMPAIGN = {
    "name": "multi", "seed": 1, "policy": {"limit": L, "window_s": 1}, "algorithms": ["sliding_log"],
    "stores": ["redis"], "nodes": 2, "redis": {"batch": BATCH, "timeout_s": 0.5, "retry_s": 0.2},
    "scenarios": [
        {"name": "multi_node", "label": "rr", "stores": ["redis-local", "redis-leased"],
         "params": {"nodes": K, "routing": "round_robin", "skew": 4, "clients": 1, "duration_s": 2.5, "add_node_at_s": 2}},
        {"name": "multi_node", "label": "sticky", "stores": ["redis-local-split"],
         "params": {"nodes": K, "routing": "sticky", "skew": 2, "clients": 1, "duration_s": 2}},
        {"name": "store_failure", "params": {"clients": 2, "load": 1.5, "duration_s": 3.5, "outage_at_s": 1, "restore_at_s": 2}},
    ],
    "scale": {"workers": 1, "lead_s": 2.0, "drain_s": 1.0},
    "downstream": {"concurrency": 16, "median_ms": 1, "sigma": 0.3},
}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("REDIS_URL", raising=False)
        path = tmp_path_factory.mktemp("multi") / "multi.yaml"
        path.write_text(yaml.safe_dump(CAMPAIGN))
        campaign = load_campaign(path)
        runner = LiveRunner(campaign, path.parent / "res")
        infos = runner.run_all(plan_runs(campaign))
        assert runner.redis is None and runner.processes.targets == []  # our redis-server and every node stopped
    return {(i["scenario"], i["store"]): i for i in infos}, path.parent / "res"


def test_every_run_is_ok_and_every_request_answered(results):
    infos, root = results
    assert len(infos) == 4
    for (scenario, store), info in infos.items():
        assert info["status"] == "ok", info.get("error")
        assert info["unanswered"] == 0 and info["sent"] == info["planned_requests"]
        run = root / "runs" / f"{scenario}__sliding_log__{store}"
        decisions = pd.read_parquet(run / "decisions.parquet")
        assert set(decisions["node"]) <= set(info["nodes"]) and not list(run.glob("decisions-*"))  # sticky may skip one
        cpu = pd.read_csv(run / "cpu.csv")
        assert {f"target:{n}" for n in info["nodes"]} <= set(cpu["process"])


def test_local_limits_on_k_round_robin_nodes_admit_about_k_times_l(results):
    fleet = results[0]["multi_node-rr", "redis-local"]["fleet"]
    assert fleet["autoscale"]["enforced_before"] >= 0.8 * K * L  # about K x L (the advertised L is 1/K of it)
    assert fleet["enforced_limit"] <= (K + 1) * L and fleet["decisions_by_node"]["node-4"] > 0


def test_limit_over_n_cuts_a_sticky_skewed_client_below_l(results):
    fleet = results[0]["multi_node-sticky", "redis-local-split"]["fleet"]
    assert 0 < fleet["enforced_limit"] <= math.ceil(L / K) < L


def test_leased_stays_within_one_batch_per_node_of_l(results):
    fleet = results[0]["multi_node-rr", "redis-leased"]["fleet"]
    assert L * 0.8 <= fleet["enforced_limit"] <= L + (K + 1) * BATCH


def test_store_failure_answers_every_request_and_reports_the_outage(results):
    info = results[0]["store_failure", "redis-shared"]
    failure = info["store_failure"]
    (phase,) = [p for p in info["phases"] if p["name"] == "outage"]
    assert phase["start_t"] < phase["end_t"] and failure["outage"]["start_t"] == phase["start_t"]
    assert failure["client_errors"] == 0 and failure["unanswered"] == 0
    assert failure["sources_during_outage"].get("fallback", 0) > 0
    assert failure["fallback_max_window_per_node"] <= failure["fallback_limit_per_node"] == L / 2
    assert failure["recovery_s"] is not None and failure["recovery_s"] >= 0
    run = json.loads((results[1] / "runs" / "store_failure__sliding_log__redis-shared" / "run.json").read_text())
    assert run["store_failure"] == failure
