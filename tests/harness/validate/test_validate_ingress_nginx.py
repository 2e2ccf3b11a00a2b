"""validate of an ingress-nginx Ingress: its limit-* annotations rendered into the NGINX lines the
controller generates (template.go, nginx.tmpl), judged as an NGINX file, its pitfalls named by
YAML path, and --live in the real nginx."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import psutil
import pytest

from harness.campaign.peers import PEERS
from harness.campaign.peers.ingress_nginx import render_ingress
from harness.cli.main import main
from targets.algorithms import Policy

needs_nginx = pytest.mark.skipif(shutil.which("nginx") is None and os.environ.get("CI", "").lower() != "true",
                                 reason="nginx not on PATH: install Debian's nginx package (CI never skips this)")
EXAMPLE = Path(__file__).parents[3] / "campaigns" / "configs" / "ingress-nginx.yaml"
TUNED = """apiVersion: v1
kind: ConfigMap
metadata: {name: ingress-nginx-controller}
data:
  limit-req-status-code: "429"
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: api
  uid: u1
  annotations:
    nginx.ingress.kubernetes.io/limit-rps: "5"
    nginx.ingress.kubernetes.io/limit-rpm: "100"
    nginx.ingress.kubernetes.io/limit-burst-multiplier: "1"
    nginx.ingress.kubernetes.io/limit-rate: "100"
"""


def test_the_annotations_render_the_lines_the_controller_generates():
    """rps before rpm in the location (template.go:885-895), zones sorted, burst = limit x multiplier,
    the key through the allow-list geo and map (nginx.tmpl:542-555), the ConfigMap's status."""
    rendered = render_ingress(TUNED)
    rid = "ZGVmYXVsdF9hcGlfdTE"  # base64url("default_api_u1") without padding
    assert rendered.nginx.splitlines()[1:] == [
        "limit_req_status 429;",
        f"geo $remote_addr $allowlist_{rid} {{ default 0; }}",
        f'map $allowlist_{rid} $limit_{rid} {{ 0 $binary_remote_addr; 1 ""; }}',
        f"limit_req_zone $limit_{rid} zone=default_api_u1_rpm:5m rate=100r/m;",
        f"limit_req_zone $limit_{rid} zone=default_api_u1_rps:5m rate=5r/s;",
        "server { location / {",
        "    limit_req zone=default_api_u1_rps burst=5 nodelay;",
        "    limit_req zone=default_api_u1_rpm burst=100 nodelay;",
        "} }",
    ]
    config = PEERS["ingress-nginx"].read_config(TUNED)
    # NGINX admits burst + 1 at once: the policies of the nginx peer, at the annotations' lines
    assert [(lim.name, lim.policy, lim.key, lim.line) for lim in config.limits] == [
        ("default_api_u1_rps", Policy(5, 1.0, 6), "ip", 13), ("default_api_u1_rpm", Policy(100, 60.0, 101), "ip", 14)]
    assert config.reject_status == 429 and config.findings == [] and config.replicas is None
    assert any("line 16 (metadata.annotations.nginx.ingress.kubernetes.io/limit-rate): limit-rate limits bandwidth" in n
               for n in config.notes)


def test_the_docs_example_is_judged_with_its_pitfalls_named_by_yaml_path(capsys):
    """limit-rps 10 with the default multiplier: a bucket of 51 (10 x 5 + 1) refilled at 10/s, 503,
    on the 3 replicas the Deployment declares; the verdict says the project is retired."""
    config = PEERS["ingress-nginx"].read_config(EXAMPLE.read_text())
    assert [lim.policy for lim in config.limits] == [Policy(10, 1.0, 51)]
    assert main(["validate", "--config", str(EXAMPLE), "--json", "-"]) == 1
    doc = json.loads(capsys.readouterr().out)
    checks = {c["name"]: c for c in doc["checks"]}
    assert checks["lint: ingress_status_code"]["message"] == (
        f"{EXAMPLE}:8 (metadata.annotations): refusals are 503 (the controller's default): clients and CDNs read them "
        "as an outage, not as 'slow down'")
    assert checks["lint: ingress_status_code"]["suggestion"] == 'the controller ConfigMap: data: {limit-req-status-code: "429"}'
    assert checks["lint: ingress_burst_multiplier"]["message"] == (
        f"{EXAMPLE}:9 (metadata.annotations.nginx.ingress.kubernetes.io/limit-rps): limit-rps: 10 admits 51 at once per "
        "address (burst = 10 x limit-burst-multiplier 5, the default, + 1), not 10 per s")
    assert checks["lint: ingress_per_replica"]["message"].startswith(
        f"{EXAMPLE}:26 (spec.replicas): 3 controller replicas each count their own")
    assert checks["lint: local_limit_not_divided"]["passed"] is False
    assert doc["notes"][0].startswith("ingress-nginx was retired in March 2026")
    assert f"{EXAMPLE}:10 (metadata.annotations.nginx.ingress.kubernetes.io/limit-allowlist): requests from 10.0.0.0/8 " \
        "are never limited" in " ".join(doc["notes"])
    assert "default_api__rps" not in doc and checks["shop_api__rps: page_load_429_rate"]["passed"] is True


@pytest.mark.parametrize(("text", "message"), [
    (TUNED.replace('limit-rps: "5"', 'limit-rps: "5r"'),
     "line 13 (metadata.annotations.nginx.ingress.kubernetes.io/limit-rps): '5r' is not a whole number"),
    ("kind: Ingress\nmetadata:\n  name: a\n  annotations:\n    nginx.ingress.kubernetes.io/limit-connections: '3'\n",
     "line 5 (metadata.annotations.nginx.ingress.kubernetes.io/limit-connections): no limit-rps or limit-rpm"),
    ("kind: Ingress\nmetadata: {name: a}\n", "no Ingress with nginx.ingress.kubernetes.io/limit-* annotations"),
    (TUNED + "---\n" + TUNED.split("---\n")[1],
     "line 23 (metadata.annotations): a second Ingress with limits"),
])
def test_what_cannot_be_read_is_named_by_line_and_path_exit_2(tmp_path, capsys, text, message):
    path = tmp_path / "ingress.yaml"
    path.write_text(text)
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    assert main(["validate", "--config", str(path), "--peer", "ingress-nginx", "--live"]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{path}: {message}" in err and len(err.splitlines()) == 1, err
    assert {p.pid for p in psutil.Process().children(recursive=True)} == before


def test_the_file_is_recognised_without_peer(tmp_path, capsys):
    path = tmp_path / "ingress.yaml"
    path.write_text(TUNED)
    assert main(["validate", "--config", str(path), "--json", "-"]) in (0, 1)
    checks = {c["name"] for c in json.loads(capsys.readouterr().out)["checks"]}
    assert {"lint: ingress_status_code", "default_api_u1_rps: over_admission"} <= checks


@needs_nginx
@pytest.mark.process
def test_live_the_rendered_lines_run_in_a_real_nginx_and_admit_the_models_burst(tmp_path, capsys):
    """limit-rps 5 x1: NGINX's bucket of 6, the ConfigMap's 429; the probe's burst admitted by the
    real nginx equals the model's count on the same send times."""
    path = tmp_path / "ingress.yaml"
    path.write_text(TUNED.replace('    nginx.ingress.kubernetes.io/limit-rpm: "100"\n', ""))
    main(["validate", "--config", str(path), "--live", "--json", "-"])
    live = {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"] if c["kind"] == "live"}
    assert live["live: refusal status"]["display"] == "429"
    burst = live["live: default_api_u1_rps: admitted before refusing"]
    assert burst["passed"] is True and int(burst["display"]) >= 6, burst
