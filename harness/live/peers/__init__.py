"""The peer targets of live runs, one module each (``base.py`` says what each does), by the
name a campaign lists them under."""

from __future__ import annotations

from harness.campaign.peers import peer

from .base import LivePeer
from .haproxy import HaproxyPeer
from .nginx import NginxPeer, NginxProblemPeer, NginxRealIpPeer
from .slowapi import SLOWAPI_LIVE

LIVE_PEERS: dict[str, LivePeer] = {p.spec.name: p for p in (NginxPeer(), NginxProblemPeer(), NginxRealIpPeer(), HaproxyPeer(),
                                                            *SLOWAPI_LIVE)}

__all__ = ["LIVE_PEERS", "LivePeer", "live_peer"]


def live_peer(name: str) -> LivePeer:
    """The live side of peer ``name`` (a PeerError naming the known ones when unknown)."""
    peer(name)
    return LIVE_PEERS[name]
