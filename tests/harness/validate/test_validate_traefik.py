"""validate of a user's own Traefik configuration: every rateLimit middleware read from a dynamic
YAML or TOML file, Kubernetes CRDs or docker-compose labels, Traefik's own pitfalls named where
they are fixed, and the documentation's example judged through the traefik_rate model."""

from __future__ import annotations

import json

import pytest

from harness.campaign.peers import PEERS, PeerError
from harness.cli.main import main
from scenarios.access_log.render import CUSTOM, LoggedRequest, render
from targets.algorithms import Policy

TRAEFIK = PEERS["traefik"]
DOC_EXAMPLE = """http:
  middlewares:
    test-ratelimit:
      rateLimit:
        average: 100
        period: 1s
        burst: 200
"""
"""traefik/traefik:docs/content/reference/routing-configuration/http/middlewares/ratelimit.md."""
PITFALLS = """http:
  routers:
    api:
      rule: PathPrefix(`/api`)
      middlewares: [slow, big@file]
    web:
      rule: PathPrefix(`/`)
      middlewares: [big]
  middlewares:
    slow:
      rateLimit:
        average: 6
        period: 1m
        sourceCriterion:
          requestHost: true
    big:
      rateLimit:
        average: 10
        burst: 100
        sourceCriterion:
          ipStrategy:
            depth: 2
"""


def _findings(text: str, source: str = "t.yaml") -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in TRAEFIK.read_config(text, source).findings:
        out.setdefault(f.lint, []).append(f"{f.where}: {f.problem}")
    return out


def test_the_documentation_example_gives_its_hand_checked_verdict(tmp_path, capsys):
    """100 per 1 s, burst 200, keyed by address: no Traefik pitfall (a hold of 1 s / 200 = 5 ms, a
    burst the 2 s ttl refills anyway: 200 / 2 = 100/s, the average); the suite's lints find an IP
    key without an IPv6 prefix and a 429 without Cache-Control; a burst of twice the rate admits
    over L in a window."""
    path = tmp_path / "dynamic.yml"
    path.write_text(DOC_EXAMPLE)
    config = TRAEFIK.read_config(DOC_EXAMPLE, str(path))
    assert [(lim.name, lim.policy, lim.key, lim.line, lim.scope) for lim in config.limits] == [
        ("test-ratelimit", Policy(100, 1.0, 200), "ip", 4, "client")]
    assert (config.reject_status, config.retry_after, config.findings) == (429, True, [])
    assert main(["validate", "--config", str(path), "--json", "-"]) == 1
    checks = {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
    failed = {name for name, c in checks.items() if not c["passed"]}
    assert failed == {"lint: ipv6_without_prefix", "lint: cacheable_429", "test-ratelimit: abusive_admission",
                      "test-ratelimit: over_admission"}
    assert {f"lint: {name}" for name in ("traefik_burst_default", "traefik_holds", "traefik_ttl_reset",
                                         "traefik_per_router", "traefik_shared_bucket", "traefik_no_limit")} <= set(checks)


def test_whom_the_traefik_file_would_have_refused_on_an_access_log(tmp_path, capsys):
    """average 2, burst 3, by address: 5 requests of one address 10 ms apart admit 3; the 4th finds
    0.06 token (a wait of 470 ms > maxDelay 250 ms) and the 5th 0.08: both refused; another
    address's 2 pass."""
    t0 = 1_760_000_040.0
    rows = [LoggedRequest(t0 + 0.01 * i, "1.1.1.1") for i in range(5)] + [LoggedRequest(t0, "2.2.2.2")] * 2
    log = tmp_path / "access.log"
    log.write_text(render(sorted(rows, key=lambda r: r.t), "custom"))
    path = tmp_path / "dynamic.yml"
    path.write_text("http:\n  middlewares:\n    rl:\n      rateLimit: {average: 2, burst: 3}\n")
    assert main(["validate", "--config", str(path), "--traffic", str(log), "--log-format", CUSTOM, "--json", "-"]) == 0
    [outcome] = json.loads(capsys.readouterr().out)["policies"]
    assert (outcome["requests"], outcome["refused"]) == (7, 2)


def test_each_pitfall_is_named_at_its_line_and_yaml_path():
    found = _findings(PITFALLS)
    assert found == {
        "traefik_burst_default": ["t.yaml:11 (http.middlewares.slow.rateLimit): slow: burst unset (or below 1): Traefik "
                                  "admits 1 request at once, then one per 10 s, not 6 at once (#8330)"],
        "traefik_holds": ["t.yaml:12 (http.middlewares.slow.rateLimit.average): slow: a request that would wait up to "
                          "500 ms is held, not refused: admitted requests gain up to 500 ms and a client sees slowness, "
                          "not a 429"],
        "traefik_shared_bucket": [
            "t.yaml:15 (http.middlewares.slow.rateLimit.sourceCriterion.requestHost): slow: keyed by the Host: every "
            "client of a host shares one bucket",
            "t.yaml:22 (http.middlewares.big.rateLimit.sourceCriterion.ipStrategy.depth): big: ipStrategy.depth 2: a "
            "request without X-Forwarded-For, or with fewer than 2 addresses in it, has no source, and all of them share "
            "one bucket (#7129)"],
        # 10/s, burst 100, ttl 2 s: 100 at once every 2 s is 50/s
        "traefik_ttl_reset": ["t.yaml:19 (http.middlewares.big.rateLimit.burst): big: a bucket idle for its ttl (2 s, "
                              "whole seconds) comes back full: a client sending 100 at once every 2 s gets 50/s, 5x the "
                              "average 10/s"],
        "traefik_per_router": ["t.yaml:17 (http.middlewares.big.rateLimit): big: used by 2 routers (router api, router "
                               "web): each keeps its own buckets, so a client gets 10 per 1 s on each"],
    }
    config = TRAEFIK.read_config(PITFALLS, "t.yaml")
    assert [(lim.name, lim.policy, lim.key, lim.scope) for lim in config.limits] == [
        ("slow", Policy(6, 60.0, 1), "ip", "instance"), ("big", Policy(10, 1.0, 100), "ip", "client")]
    assert config.trusted_proxies == 2


def test_a_toml_file_names_its_lines():
    text = """[http.routers.api]
  rule = "PathPrefix(`/api`)"
  middlewares = ["rl"]

[http.middlewares.rl.rateLimit]
  average = 2
  period = 1
  [http.middlewares.rl.rateLimit.sourceCriterion]
    requestHeaderName = "X-Api-Key"
"""
    config = TRAEFIK.read_config(text, "d.toml")
    assert [(lim.name, lim.policy, lim.key, lim.line) for lim in config.limits] == [("rl", Policy(2, 1.0, 1), "api_key", 5)]
    assert _findings(text, "d.toml")["traefik_burst_default"] == [
        "d.toml:5 (http.middlewares.rl.rateLimit): rl: burst unset (or below 1): Traefik admits 1 request at once, then "
        "one per 500 ms, not 2 at once (#8330)"]
    assert _findings(text, "d.toml")["traefik_holds"][0].startswith("d.toml:6 (http.middlewares.rl.rateLimit.average)")


def test_kubernetes_crds_with_the_fleet_their_deployment_declares():
    text = """apiVersion: apps/v1
kind: Deployment
metadata: {name: traefik}
spec:
  replicas: 3
---
apiVersion: traefik.io/v1alpha1
kind: Middleware
metadata:
  name: api-limit
spec:
  rateLimit:
    average: 50
    period: 1s
    burst: 50
---
apiVersion: traefik.io/v1alpha1
kind: IngressRoute
metadata: {name: app}
spec:
  routes:
    - match: PathPrefix(`/api`)
      middlewares: [{name: api-limit}]
"""
    config = TRAEFIK.read_config(text, "k.yaml")
    assert [(lim.name, lim.policy, lim.line) for lim in config.limits] == [("api-limit", Policy(50, 1.0, 50), 12)]
    assert (config.replicas, config.findings) == (3, [])


def test_docker_compose_labels():
    text = """services:
  whoami:
    image: traefik/whoami
    labels:
      - traefik.http.routers.who.middlewares=rl
      - traefik.http.middlewares.rl.ratelimit.average=20
      - traefik.http.middlewares.rl.ratelimit.period=2s
      - traefik.http.middlewares.rl.ratelimit.burst=30
"""
    config = TRAEFIK.read_config(text, "compose.yaml")
    assert [(lim.name, lim.policy, lim.line) for lim in config.limits] == [("rl", Policy(20, 2.0, 30), 6)]
    assert _findings(text, "compose.yaml") == {"traefik_ttl_reset": [
        "compose.yaml:8 (services.whoami.labels[3]) label traefik.http.middlewares.rl.ratelimit.burst: rl: a bucket "
        "idle for its ttl (2 s, whole seconds) comes back full: a client sending 30 at once every 2 s gets 15/s, 1.5x the "
        "average 10/s"]}


def test_a_traefik_file_is_recognised_without_peer():
    assert TRAEFIK.recognises(DOC_EXAMPLE) and TRAEFIK.recognises("[http.middlewares.a.rateLimit]\naverage = 1\n")
    assert not TRAEFIK.recognises("limit_req_zone $binary_remote_addr zone=z:1m rate=5r/s;")


@pytest.mark.parametrize(("text", "message"), [
    ("http:\n  routers:\n    a: {rule: Host(`x`)}\n", "{path}: no rateLimit middleware: nothing in the file limits requests"),
    ("http:\n  middlewares:\n    a:\n      rateLimit:\n        averge: 10\n",
     "{path}:5 (http.middlewares.a.rateLimit.averge): averge: not a rateLimit field validate knows"),
    ("http:\n  middlewares:\n    a:\n      rateLimit: {average: 2.5}\n",
     "{path}:4 (http.middlewares.a.rateLimit.average): average 2.5: Traefik takes a whole number (int64)"),
    ("http:\n  middlewares:\n    a:\n      rateLimit: {average: 5, period: 1x}\n",
     "{path}:4 (http.middlewares.a.rateLimit.period): period '1x': not a Go duration"),
    ("http:\n  middlewares:\n    a:\n      rateLimit: {average: 5, period: -1s}\n", "period -1s: negative"),
    ("http:\n  middlewares:\n    a:\n      rateLimit: {average: 0}\n",
     "{path}: no rateLimit with an average above 0: nothing in the file limits requests"),
    ("http:\n  middlewares:\n    a:\n      rateLimit:\n        average: 5\n        sourceCriterion: {requestHost: true, "
     "requestHeaderName: X}\n", "sourceCriterion sets more than one of ipStrategy, requestHeaderName, requestHost"),
    ("http:\n  middlewares:\n    a:\n      rateLimit: {average: 5}\n    b:\n      inFlightReq: {amount: 10}\n",
     "{path}:6 (http.middlewares.b.inFlightReq): inFlightReq limits concurrent requests, not a rate"),
])
def test_bad_or_unsupported_input_is_named_and_exits_2(tmp_path, capsys, text, message):
    path = tmp_path / "dyn.yaml"
    path.write_text(text)
    with pytest.raises(PeerError):
        TRAEFIK.read_config(text, str(path))
    assert main(["validate", "--config", str(path), "--peer", "traefik"]) == 2
    err = capsys.readouterr().err.strip()
    assert message.format(path=path) in err and len(err.splitlines()) == 1
