"""The side under test, without starting anything: each kind answers the runner through the one
protocol; a url peer is a LivePeer like the others; checking a campaign is pure and the preflight
does the I/O; each entry's model and its arrivals are built once and handed on."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from harness.campaign.config_file import CampaignError
from harness.campaign.live import Campaign
from harness.campaign.peers import PeerError
from harness.live.peers import LivePeer, live_peer
from harness.live.plan import plan_runs
from harness.live.preflight import preflight
from harness.live.sides.base import SideSetup
from harness.live.sides.suite import SuiteSide
from harness.live.supervise import Processes
from harness.processes.ports import free_ports
from scenarios import build_model
from scenarios.live_plan import LivePlan

CAMPAIGN = {"name": "sides", "policy": {"limit": 20, "window_s": 1}, "algorithms": ["fixed_window"],
            "scenarios": [{"name": "boundary_burst", "params": {"instant": 1, "boundaries": 1}}]}


def _campaign(url: str) -> Campaign:
    return Campaign.model_validate({**CAMPAIGN, "peers": [{"name": "gw", "url": url, "reject_status": [429, 503]}]})


def _setup(campaign: Campaign, name: str, tmp_path: Path) -> SideSetup:
    run = next(r for r in plan_runs(campaign) if r.name.endswith(name))
    return SideSetup(run, campaign, tmp_path, Processes(), lambda: pytest.fail("no Redis is asked for"))


def test_checking_a_campaign_is_pure_and_the_preflight_says_the_url_does_not_answer():
    url = f"http://127.0.0.1:{free_ports(1)[0]}"
    campaign = _campaign(url)  # nothing answers there: the file itself is fine
    with pytest.raises(CampaignError) as refused:
        preflight(campaign, "c.yaml")
    assert str(refused.value).startswith(f"c.yaml: peer gw: {url} is unreachable (ConnectError")


def test_a_url_peer_is_a_live_peer_whose_side_starts_nothing(tmp_path):
    campaign = _campaign("http://127.0.0.1:1/")
    setup = _setup(campaign, "__gw", tmp_path)
    live = live_peer(setup.run.limiter.peer)
    assert isinstance(live, LivePeer) and live.refused == frozenset({429, 503}) and live.response_fix(setup.run.policy) is None
    side = live.side(setup)
    assert side.hosts() == ["http://127.0.0.1:1"] and side.start() == [] and side.started == []
    assert (side.counters_url, side.live_counters, side.start_s) == (None, False, 0.0)


def test_a_peer_is_named_by_name_and_the_url_kind_says_how_to_name_one():
    assert live_peer("nginx").spec.name == "nginx"
    with pytest.raises(PeerError, match=r"peer url: an endpoint of yours is named in the campaign with its URL"):
        live_peer("url")
    with pytest.raises(PeerError, match=r"unknown peer 'nope'; choose from: nginx"):
        live_peer("nope")


def test_the_suite_side_sends_to_each_of_its_nodes_and_counts_live(tmp_path):
    campaign = Campaign.model_validate({**CAMPAIGN, "stores": ["redis-shared"], "nodes": 3})
    side = SuiteSide(_setup(campaign, "__redis-shared", tmp_path))
    hosts = side.hosts()
    assert len(set(hosts)) == 3 and all(h.startswith("http://127.0.0.1:") for h in hosts)
    assert side.live_counters and side.counters_url is None  # none until its nodes have started


def test_each_entry_s_model_and_arrivals_are_built_once_and_handed_on():
    campaign = Campaign.model_validate({**CAMPAIGN, "algorithms": ["fixed_window", "token_bucket"], "peers": ["nginx"]})
    runs = plan_runs(campaign)
    model = campaign.model_for(campaign.scenarios[0])
    assert len(runs) == 3 and all(run.model is model for run in runs)
    plan = LivePlan("boundary_burst", 20.0, 1.0, campaign.seed, 0.0, ["http://h"], "client",
                    params={"instant": "1", "boundaries": "1"}).with_model(model)
    assert plan.model() is model and plan.arrivals() is model.arrivals()
    fresh = replace(plan)  # a plan read from plan.json builds its own, once
    assert fresh.model() is fresh.model() and fresh.arrivals().t == model.arrivals().t
    with pytest.raises(ValueError, match="the plan replays boundary_burst at 20/1 s, seed 1; not boundary_burst at 10/1 s"):
        plan.with_model(build_model("boundary_burst", 10.0, 1.0, 1, {}))
