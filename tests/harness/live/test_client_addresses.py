"""Clients with their own addresses, and no invisible traffic: against real targets keyed by the
client address (the suite's own, its one limit scoped to ``ip``), every simulated client of a
campaign run sends from its own loopback address, so the target's decision log holds one key per
client with exactly the decisions the client log says; the suite's own requests (the warm-up, the
refusal probe) are in the client log with their role, from addresses of their own, on no tested
key. A url peer that declares ``key: ip`` is judged per the key its limiter used."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from harness.campaign.live import Campaign
from harness.live.plan import plan_runs
from harness.live.runner import LiveRunner
from harness.processes.target import running_target
from scenarios.addresses import PROBE_ADDRESS, WARM_UP_ADDRESS
from tests.recorded import suite_model_agrees

pytestmark = pytest.mark.process  # every test here starts processes

CLIENTS = 5
STEADY = {"name": "steady", "params": {"clients": CLIENTS, "load": 2.0, "duration_s": 2}}
"""Each client at twice its own limit for two windows: every key has admissions and refusals."""
PER_IP = {"limits": [{"name": "per-ip", "scope": "ip"}]}
SCALE = {"workers": 1, "lead_s": 3.0, "drain_s": 0.5}


def _run(campaign: dict, out: Path, name: str) -> Path:
    """The one run ``name`` of ``campaign``, live; its folder."""
    campaign = Campaign.model_validate(campaign)
    run = next(r for r in plan_runs(campaign) if r.name == name)
    runner = LiveRunner(campaign, out)
    try:
        info = runner.execute(run)
    finally:
        runner.close()
    assert info["status"] == "ok", info.get("error")
    return out / "runs" / run.name


def _by_role(run_dir: Path) -> dict[str, pd.DataFrame]:
    client = pd.read_parquet(run_dir / "client.parquet")
    return {role: rows for role, rows in client.groupby("role")}


def test_each_client_is_a_key_of_its_own_at_a_target_keyed_by_address(tmp_path):
    run_dir = _run({"name": "addr", "policy": {"limit": 3, "window_s": 1}, "algorithms": ["sliding_log"],
                    "scenarios": [{**STEADY, "target": PER_IP}], "scale": SCALE,
                    "downstream": {"median_ms": 0}}, tmp_path, "steady__sliding_log__memory")
    decisions = suite_model_agrees(run_dir)  # each key's decisions are the sliding log's on the target's own times
    rows = _by_role(run_dir)
    plan, warm_up = rows["plan"], rows["warm-up"]
    assert set(rows) == {"plan", "warm-up"}  # the suite's target is not probed
    # the target counted CLIENTS clients, each by the address the client log says it sent from
    assert plan["client_address"].nunique() == CLIENTS == decisions["key"].nunique()
    said = plan.set_index("request_id")
    assert (decisions["key"] == "ip:" + said.loc[decisions["request_id"], "client_address"].to_numpy()).all()
    assert (decisions["allowed"] == (said.loc[decisions["request_id"], "status"] == 200).to_numpy()).all()
    assert len(decisions) == len(plan) and {200, 429} <= set(plan["status"])
    # the warm-up asked from its own address, on no client's key
    assert set(warm_up["client_address"]) == {WARM_UP_ADDRESS} and set(warm_up["status"]) == {200}
    assert f"ip:{WARM_UP_ADDRESS}" not in set(decisions["key"])


def test_a_url_peer_keyed_by_ip_is_judged_per_address_and_its_probe_spends_no_clients_quota(tmp_path):
    config = tmp_path / "endpoint.yaml"
    config.write_text(yaml.safe_dump({**PER_IP, "algorithm": "sliding_log", "limit": 3, "window_s": 1,
                                      "downstream": {"service_time": {"median_ms": 0}}}))
    log = tmp_path / "endpoint-decisions.parquet"
    with running_target(["--config", str(config), "--decision-log", str(log)], log_dir=tmp_path / "endpoint") as ep:
        run_dir = _run({"name": "url", "policy": {"limit": 3, "window_s": 1}, "algorithms": ["none"],
                        "peers": [{"name": "gw", "url": ep.url, "key": "ip"}], "scenarios": [STEADY], "scale": SCALE,
                        "downstream": {"median_ms": 0}}, tmp_path / "res", "steady__gw")
    assert json.loads((run_dir / "run.json").read_text())["keyed_by"] == "ip"
    own = pd.read_parquet(log)  # what the endpoint itself decided, and by which key
    inferred = pd.read_parquet(run_dir / "decisions.parquet")
    rows = _by_role(run_dir)
    assert set(rows) == {"plan", "warm-up", "probe"}
    # every plan request the client inferred is keyed as the endpoint keyed it, and decided alike
    endpoint = own.set_index("request_id")
    assert inferred["key"].nunique() == CLIENTS
    assert (inferred["key"].to_numpy() == endpoint.loc[inferred["request_id"], "key"].to_numpy()).all()
    assert (inferred["allowed"].to_numpy() == endpoint.loc[inferred["request_id"], "allowed"].to_numpy()).all()
    # the probe after the load drove a key of its own (its address) into the limit, on no client's key
    probe = rows["probe"]
    assert set(probe["client_address"]) == {PROBE_ADDRESS} and 429 in set(probe["status"])
    probed = own[own["request_id"].isin(probe["request_id"])]
    assert set(probed["key"]) == {f"ip:{PROBE_ADDRESS}"} and len(probed) == len(probe)
    assert not set(probed["key"]) & set(inferred["key"])
    assert set(rows["warm-up"]["client_address"]) == {WARM_UP_ADDRESS}


def test_a_closed_loop_client_and_its_follow_ups_send_from_its_one_address(tmp_path):
    """The drip (burst, then each refusal retried at Retry-After) is one attacker under two client
    ids: one address, one key at the target, every follow-up on it."""
    drip = {"name": "adversarial_drip", "params": {"delta_s": 0.2, "min_gap_s": 0.05, "duration_s": 4}, "target": PER_IP}
    run_dir = _run({"name": "drip", "policy": {"limit": 3, "window_s": 1}, "algorithms": ["sliding_log"],
                    "scenarios": [drip], "scale": SCALE, "downstream": {"median_ms": 0}}, tmp_path,
                    "adversarial_drip__sliding_log__memory")
    decisions = suite_model_agrees(run_dir)
    rows = _by_role(run_dir)
    plan = rows["plan"]
    answered = plan[plan["status"] > 0]
    assert plan["request_id"].str.contains(r"\.").any()  # the drip's follow-ups are there
    assert plan["client_address"].nunique() == 1 and set(decisions["key"]) == {f"ip:{plan['client_address'].iloc[0]}"}
    assert len(decisions) == len(answered) and int(decisions["allowed"].sum()) == int((answered["status"] == 200).sum())
    assert set(rows["warm-up"]["client_address"]) == {WARM_UP_ADDRESS}
