"""The peer targets of live runs, one module each (``base.py`` says what each does), by the
name a campaign lists them under; a peer built from a campaign entry (a url peer) by its system."""

from __future__ import annotations

from collections.abc import Callable

from harness.campaign.peers import Peer, PeerError, peer
from harness.campaign.peers.own_file import ConfigPeer
from harness.campaign.peers.url import SYSTEM as URL_SYSTEM

from .base import LivePeer, ProcessPeer
from .envoy import EnvoyPeer
from .haproxy import HaproxyPeer
from .ingress_nginx import IngressNginxPeer
from .nginx import NginxPeer, NginxProblemPeer, NginxRealIpPeer
from .slowapi import SLOWAPI_LIVE
from .traefik import TraefikPeer
from .url import UrlLivePeer

LIVE_PEERS: dict[str, ProcessPeer] = {p.spec.name: p for p in (NginxPeer(), NginxProblemPeer(), NginxRealIpPeer(),
                                                               HaproxyPeer(), EnvoyPeer(), TraefikPeer(), *SLOWAPI_LIVE,
                                                               IngressNginxPeer())}
LIVE_KINDS: dict[str, Callable[..., LivePeer]] = {URL_SYSTEM: UrlLivePeer}
"""The live side of a peer a campaign entry describes (``{name, url}``), by its ``system``."""

__all__ = ["LIVE_KINDS", "LIVE_PEERS", "LivePeer", "ProcessPeer", "live_peer"]


def live_peer(name: str | Peer) -> LivePeer:
    """The live side of a peer: by its registered name (a PeerError naming the known ones when
    unknown), or from its campaign side (a url peer of the campaign's; a product running the
    user's file, rendered as ``validate --config FILE --live`` renders it)."""
    if isinstance(name, ConfigPeer):
        return process_peer(name.base.name).from_config(name.text)
    if isinstance(name, Peer):
        return LIVE_PEERS.get(name.name) or LIVE_KINDS[name.system](name)
    if name in LIVE_KINDS:
        raise PeerError(f"peer {name}: an endpoint of yours is named in the campaign with its URL "
                        "({name: ..., url: ...}), not by its kind")
    spec = peer(name)
    if name not in LIVE_PEERS:
        raise PeerError(f"peer {name}: {spec.system} does not run here; validate judges its file by the model "
                        "(without --live)")
    return LIVE_PEERS[name]


def process_peer(name: str) -> ProcessPeer:
    """A peer the suite starts, by name (a PeerError naming the known ones when unknown)."""
    peer(name)
    return LIVE_PEERS[name]
