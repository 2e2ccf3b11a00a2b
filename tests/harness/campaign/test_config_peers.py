"""A live campaign's ``peers:`` item ``{name, config}``: a product of the suite's running the user's
own config file (read as ``validate --config`` reads it), its runs replaying every scenario at the
file's first limit and judged by it. Pure: files read, nothing started."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.campaign.config_file import CampaignError
from harness.campaign.live import load_campaign
from harness.campaign.peers import PEERS
from harness.campaign.peers.own_file import ConfigPeer
from harness.live.peers import LIVE_PEERS, LivePeer, live_peer
from harness.live.peers.nginx import NginxFilePeer
from harness.live.plan import plan_runs
from targets.algorithms import Policy

USER_NGINX = """http {
    limit_req_zone $binary_remote_addr zone=api:10m rate=10r/s;
    server {
        listen 80;
        location /api/ {
            limit_req zone=api burst=5 nodelay;
            limit_req_status 429;
            proxy_pass http://backend;
        }
    }
}
"""
CAMPAIGN = {"name": "cfg", "policy": {"limit": 10, "window_s": 1, "burst": 6}, "algorithms": ["token_bucket"],
            "peers": [{"name": "nginx", "config": "conf/nginx.conf"}],
            "scenarios": [{"name": "boundary_burst", "params": {"instant": True, "boundaries": 1, "delta_s": 0.33}}]}


def _campaign(tmp_path: Path, peers: list | None = None, **change: object) -> Path:
    (tmp_path / "conf").mkdir(exist_ok=True)
    (tmp_path / "conf" / "nginx.conf").write_text(USER_NGINX)
    (tmp_path / "conf" / "open.conf").write_text("http { server { location / { proxy_pass http://backend; } } }\n")
    path = tmp_path / "campaign.yaml"
    path.write_text(yaml.safe_dump({**CAMPAIGN, **({"peers": peers} if peers is not None else {}), **change}))
    return path


def test_a_peer_runs_the_users_file_beside_the_suite_on_the_same_traffic(tmp_path):
    campaign = load_campaign(_campaign(tmp_path))
    spec = campaign.peer_spec("nginx")
    assert isinstance(spec, ConfigPeer) and spec.entry.config == tmp_path / "conf" / "nginx.conf"  # from the campaign's folder
    assert spec.own_policy() == Policy(10, 1.0, 6)  # rate=10r/s burst=5: 10 per 1 s, burst 6
    suite, peer = plan_runs(campaign)
    assert (suite.name, peer.name) == ("boundary_burst__token_bucket__memory", "boundary_burst__nginx")
    assert suite.policy == peer.policy == Policy(10, 1, 6) and peer.model is suite.model and len(peer.model.arrivals()) == 20
    assert (peer.limiter.label, peer.system, peer.limiter.store_label) == ("nginx", "nginx", "zone")
    assert (peer.params.capacity, peer.params.rate) == (6, 10.0)
    assert spec.recorded() == {"path": str(tmp_path / "conf" / "nginx.conf"), "peer": "nginx", "limit_name": "api",
                               "line": 6, "limit": 10, "window_s": 1.0, "burst": 6}
    assert campaign.model_dump(mode="json")["peers"] == [{"name": "nginx", "config": str(tmp_path / "conf" / "nginx.conf")}]


def test_its_live_side_is_the_users_lines_in_the_generated_server(tmp_path):
    live = live_peer(load_campaign(_campaign(tmp_path)).peer_spec("nginx"))
    assert isinstance(live, NginxFilePeer)
    conf = live.config(Policy(10, 1, 6), port=8001, downstream_port=8002, run_dir=tmp_path)
    assert "limit_req_zone $binary_remote_addr zone=api:10m rate=10r/s;" in conf
    assert "limit_req zone=api burst=5 nodelay;" in conf and "listen 127.0.0.1:8001;" in conf
    assert "server 127.0.0.1:8002;" in conf and "listen 80" not in conf and "backend" not in conf


@pytest.mark.parametrize(("item", "message"), [
    ({"name": "nginxx", "config": "conf/nginx.conf"}, "peers[nginxx].file.name: unknown peer 'nginxx'; choose from: nginx, "),
    ({"name": "nginx", "config": "conf/missing.conf"}, "peers[nginx].file.config: {tmp}/conf/missing.conf: no such file"),
    ({"name": "kong", "config": "conf/nginx.conf"}, "peers[kong].file.name: kong is modelled, not run here ("),
    ({"name": "cloudflare", "config": "conf/nginx.conf"}, "peers[cloudflare].file.name: cloudflare is modelled, not run here"),
    ({"name": "slowapi-fixed-window", "config": "conf/nginx.conf"},
     "peers[slowapi-fixed-window].file.name: slowapi-fixed-window runs only as the campaign's policy configures it; "
     "a file of yours runs in: nginx, haproxy, traefik, envoy, ingress-nginx"),
    ({"name": "nginx", "config": "conf/open.conf"},
     "peers[nginx].file.config: {tmp}/conf/open.conf: no limit_req line: nothing in the file limits requests"),
    ({"name": "haproxy", "config": "conf/nginx.conf"}, "peers[haproxy].file.config: {tmp}/conf/nginx.conf: "),
    ({"name": "nginx", "config": "conf/nginx.conf", "url": "http://127.0.0.1:1"},
     "peers[nginx].file.url: unknown field; valid: name, config"),
])
def test_a_peer_file_the_campaign_cannot_run_is_refused_in_one_line(tmp_path, item, message):
    with pytest.raises(CampaignError) as exc:
        load_campaign(_campaign(tmp_path, [item]))
    said = str(exc.value)
    assert message.format(tmp=tmp_path) in said and len(said.splitlines()) == 1, said


@pytest.mark.parametrize(("change", "where"), [
    ({"policy": {"limit": 20, "window_s": 1}}, "scenarios[boundary_burst] runs at 20 per 1 s, burst 20: a scenario's runs are "
                                                "judged by one policy; set the campaign policy to the file's: "),
    ({"scenarios": [{"name": "boundary_burst", "policy": {"limit": 10, "window_s": 1}}]},
     "scenarios[boundary_burst] runs at 10 per 1 s, burst 10: a scenario's runs are judged by one policy; set its policy"),
])
def test_a_campaign_not_at_the_files_limit_is_refused_saying_what_to_write(tmp_path, change, where):
    with pytest.raises(CampaignError) as exc:
        load_campaign(_campaign(tmp_path, **change))
    said = str(exc.value)
    assert f"peers[nginx].config: {tmp_path}/conf/nginx.conf enforces 10 per 1 s, burst 6 (api, line 6); {where}" in said
    assert said.endswith("{limit: 10, window_s: 1, burst: 6}") and len(said.splitlines()) == 1


def test_a_product_and_its_file_peer_are_one_run_name(tmp_path):
    with pytest.raises(CampaignError, match="peers: nginx is listed more than once"):
        load_campaign(_campaign(tmp_path, ["nginx", {"name": "nginx", "config": "conf/nginx.conf"}]))


def test_every_product_that_runs_a_file_renders_one_live():
    runs = {name for name, p in PEERS.items() if p.runs_files}
    assert runs == {"nginx", "haproxy", "traefik", "envoy", "ingress-nginx"}
    assert all(type(LIVE_PEERS[name]).from_config is not LivePeer.from_config for name in runs)
