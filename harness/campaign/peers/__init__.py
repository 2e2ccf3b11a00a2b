"""Peer targets: limiters the suite did not write, one module each (``base.py`` says what every
peer is), and the registry a campaign, ``list`` and ``simulate`` read."""

from __future__ import annotations

from targets.algorithms import Policy

from .aws_gateway import AwsApiGateway
from .base import PEER_STORE, ConfigFinding, ConfigLimit, Peer, PeerConfig, PeerError
from .caddy import Caddy
from .cloudflare import Cloudflare
from .envoy import Envoy
from .envoy_ratelimit import EnvoyRatelimit
from .haproxy import Haproxy
from .ingress_nginx import IngressNginx
from .kong import Kong
from .nginx import Nginx, NginxProblem, NginxRealIp
from .slowapi import SLOWAPI_PEERS
from .traefik import Traefik

PEERS: dict[str, Peer] = {p.name: p for p in (Nginx(), NginxProblem(), NginxRealIp(), Haproxy(), Traefik(), Envoy(),
                                       IngressNginx(), *SLOWAPI_PEERS, EnvoyRatelimit(), Kong(), Caddy(),
                                       AwsApiGateway(), Cloudflare())}
"""Every peer a campaign may list by name."""

SIMULATE_ALIASES = {"nginx_limit_req": "nginx", "haproxy_http_req_rate": "haproxy",
                    **{p.name.replace("-", "_"): p.name for p in SLOWAPI_PEERS if not p.uses_redis}}
"""``simulate --algorithm`` names that predict a peer: its mapped model under the mapped policy."""

__all__ = ["PEERS", "PEER_STORE", "SIMULATE_ALIASES", "ConfigFinding", "ConfigLimit", "Peer", "PeerConfig", "PeerError", "decided_by",
           "model_policy", "peer"]


def peer(name: str) -> Peer:
    """The peer called ``name``; a PeerError listing the known ones otherwise."""
    try:
        return PEERS[name]
    except KeyError:
        raise PeerError(f"unknown peer {name!r}; choose from: {', '.join(PEERS)}") from None


def model_policy(name: str, policy: Policy) -> tuple[str, Policy]:
    """The suite's algorithm and policy that predict peer ``name`` under ``policy``."""
    return peer(name).model(policy)


def decided_by(name: str, policy: Policy) -> tuple[str, Policy]:
    """The algorithm and policy that decide for ``name``: itself, or a simulate alias's mapped model."""
    if name in SIMULATE_ALIASES:
        return model_policy(SIMULATE_ALIASES[name], policy)
    return name, policy
