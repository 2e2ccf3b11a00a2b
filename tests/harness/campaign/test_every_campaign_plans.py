"""Every campaign the suite ships loads and plans, as a live campaign (``run``) or as a simulation
campaign (``simulate --campaign``): a bound tightened elsewhere must not leave one refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.campaign.config_file import CampaignError
from harness.campaign.live import load_campaign
from harness.campaign.simulate import load_sim_campaign
from harness.live.plan import plan_runs
from harness.sim.runner import plan_from_campaign

pytestmark = pytest.mark.slow  # every shipped campaign planned, the largest in tens of seconds

CAMPAIGNS = sorted((Path(__file__).parents[3] / "campaigns").glob("*.yaml"))


@pytest.mark.parametrize("path", CAMPAIGNS, ids=lambda p: p.name)
def test_a_shipped_campaign_loads_and_plans(path):
    try:
        runs = plan_runs(load_campaign(path))
    except CampaignError as live:
        try:
            runs = plan_from_campaign(load_sim_campaign(path)).runs
        except CampaignError as virtual:
            pytest.fail(f"neither a live campaign ({live}) nor a simulation campaign ({virtual})")
    assert runs
