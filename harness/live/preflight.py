"""What a live campaign needs of this machine and the network, checked once before anything
starts: every peer's binary on PATH (nginx, haproxy), every url peer answering. The campaign
file's own checks (harness/campaign/) are pure; this is where the I/O of checking is.
One line naming what is missing, exit 2 (a CampaignError, like every bad campaign)."""

from __future__ import annotations

from harness.campaign.config_file import CampaignError
from harness.campaign.live import Campaign
from harness.campaign.peers import PeerError


def preflight(campaign: Campaign, source: str) -> None:
    """Every peer the campaign lists can run here (``Peer.preflight``); ``source``: the campaign
    file, named first in the message as a campaign error is."""
    for name in campaign.peer_names:
        try:
            campaign.peer_spec(name).preflight()
        except PeerError as exc:
            raise CampaignError(f"{source}: {exc}") from None
