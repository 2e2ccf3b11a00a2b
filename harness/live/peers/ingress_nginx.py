"""The ingress-nginx peer of a live run: the real nginx running the lines the controller renders
from an Ingress's annotations (harness/campaign/peers/ingress_nginx.py), as the nginx peer runs
a user's own NGINX file."""

from __future__ import annotations

from harness.campaign.peers import PEERS
from harness.campaign.peers.ingress_nginx import render_ingress
from harness.campaign.peers.nginx_config import read_nginx

from .base import ProcessPeer
from .nginx import NginxFilePeer, NginxPeer


class IngressNginxPeer(NginxPeer):
    spec = PEERS["ingress-nginx"]

    def from_config(self, text: str) -> ProcessPeer:
        return NginxFilePeer(read_nginx(render_ingress(text).nginx))
