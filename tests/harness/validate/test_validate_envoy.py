"""validate of an Envoy bootstrap or an Istio EnvoyFilter: its local_ratelimit buckets read with
the YAML path and line of every pitfall, judged through envoy_local_ratelimit (one bucket for
every client), and every unreadable field one line, exit 2, nothing started."""

from __future__ import annotations

import json
from pathlib import Path

import psutil
import pytest

from harness.campaign.peers import PEERS, PeerError
from harness.campaign.peers.own_file import which_peer
from harness.cli.main import main
from scenarios.access_log.render import CUSTOM, LoggedRequest, render
from targets.algorithms import Policy

CONFIGS = Path(__file__).resolve().parents[3] / "campaigns" / "configs"
ISTIO = CONFIGS / "istio-local-ratelimit.yaml"
BOOTSTRAP = CONFIGS / "envoy-local-ratelimit.yaml"
ENVOY = PEERS["envoy"]
T0 = 1_760_000_040.0

TB = "type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit"
ON = "{default_value: {numerator: 100, denominator: HUNDRED}}"


def _filter(body: str) -> str:
    """A listener's http_filters with one local_ratelimit whose message holds ``body`` (flow YAML)."""
    return f"""static_resources:
  listeners:
  - name: l
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          http_filters:
          - name: envoy.filters.http.local_ratelimit
            typed_config: {{"@type": "{TB}", stat_prefix: rl, {body}}}
          - name: envoy.filters.http.router
"""


@pytest.fixture(autouse=True)
def _without_envoys_own_parse(monkeypatch):
    """The reader's verdict alone: ``envoy --mode validate`` starts a process (tests/harness/live/peers/test_envoy.py)."""
    monkeypatch.setattr("harness.campaign.peers.envoy.envoy_binary", lambda: None)


def _findings(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in ENVOY.read_config(text, "envoy.yaml").findings:
        out.setdefault(f.lint, []).append(f"{f.where}: {f.problem}")
    return out


def test_istios_documented_envoyfilter_is_one_bucket_for_every_client_on_each_pod(capsys):
    """Istio's task: 4 tokens, 4 per 60 s, enabled and enforced at 100%, no Retry-After, 3 replicas."""
    config = ENVOY.read_config(ISTIO.read_text(), str(ISTIO))
    [lim] = config.limits
    assert (lim.name, lim.policy, lim.key, lim.scope, lim.line) == ("http_local_rate_limiter", Policy(4, 60.0, 4),
                                                                     "global", "instance", 30)
    assert (config.replicas, config.reject_status, config.retry_after) == (3, 429, False)
    assert [(f.lint, f.where) for f in config.findings] == [("envoy_retry_after", f"{ISTIO}:44 (spec.configPatches[0]"
                                                             ".patch.value.typed_config.value.response_headers_to_add)")]
    assert 'value: "15"' in config.findings[0].fix  # a token is back every 60 / 4 s
    assert main(["validate", "--config", str(ISTIO), "--json", "-"]) == 1
    captured = capsys.readouterr()
    checks = {c["name"]: c for c in json.loads(captured.out)["checks"]}
    assert {n: checks[f"lint: {n}"]["passed"] for n in ("envoy_enabled_enforced", "envoy_retry_after",
                                                         "envoy_filter_in_chain", "local_limit_not_divided")} == {
        "envoy_enabled_enforced": True, "envoy_retry_after": False, "envoy_filter_in_chain": True,
        "local_limit_not_divided": False}
    # one bucket of 4 a minute for 20 users loading pages of 8: nearly every page sees a 429
    assert checks["http_local_rate_limiter: page_load_429_rate"]["value"] > 0.9
    assert "the fleet enforces up to 12 per 60 s where the file states 4" in " ".join(captured.err.split())


def test_envoys_documented_route_bucket_is_read_from_typed_per_filter_config():
    config = ENVOY.read_config(BOOTSTRAP.read_text(), "envoy.yaml")
    assert [(lim.name, lim.policy, lim.key) for lim in config.limits] == [
        ("http_local_rate_limiter (prefix /foo)", Policy(1000, 1.0, 10000), "global")]
    assert [f.lint for f in config.findings] == ["envoy_retry_after"]  # enabled, enforced, and in the chain


@pytest.mark.parametrize(("body", "lint", "found"), [
    ("token_bucket: {max_tokens: 5, fill_interval: 1s}", "envoy_enabled_enforced",
     ["envoy.yaml:10 (static_resources.listeners[0].filter_chains[0].filters[0].typed_config.http_filters[0]"
      ".typed_config): rl: filter_enabled unset (defaults to 0%): the filter checks no request: nothing is limited",
      "envoy.yaml:10 (static_resources.listeners[0].filter_chains[0].filters[0].typed_config.http_filters[0]"
      ".typed_config): rl: filter_enforced unset (defaults to 0%): refusals are only counted (shadow mode): every "
      "request is forwarded"]),
    (f"token_bucket: {{max_tokens: 5, fill_interval: 1s}}, filter_enabled: {ON}, "
     "filter_enforced: {default_value: {numerator: 50}}", "envoy_enabled_enforced",
     ["envoy.yaml:10 (static_resources.listeners[0].filter_chains[0].filters[0].typed_config.http_filters[0]"
      ".typed_config.filter_enforced): rl: filter_enforced is 50%: the rest pass unlimited"]),
    (f"token_bucket: {{max_tokens: 5, fill_interval: 1s}}, filter_enabled: {ON}, filter_enforced: {ON}, "
     "descriptors: [{entries: [{key: client, value: foo}], token_bucket: {max_tokens: 1, fill_interval: 1s}}]",
     "envoy_descriptor_matches",
     ["envoy.yaml:10 (static_resources.listeners[0].filter_chains[0].filters[0].typed_config.http_filters[0]"
      ".typed_config.descriptors[0]): rl: descriptor [client=foo] matches no rate_limits actions (stage 0) in this "
      "file: no request ever reaches its bucket"]),
])
def test_each_pitfall_is_named_by_its_yaml_path_and_line(body, lint, found):
    assert _findings(_filter(body))[lint] == found


def test_a_descriptor_that_an_action_writes_matches_and_a_dynamic_remote_address_is_per_client():
    body = (f"token_bucket: {{max_tokens: 50, tokens_per_fill: 50, fill_interval: 1s}}, filter_enabled: {ON}, "
            f"filter_enforced: {ON}, rate_limits: [{{actions: [{{remote_address: {{}}}}]}}, "
            "{actions: [{request_headers: {header_name: x-plan, descriptor_key: plan}}]}], descriptors: ["
            "{entries: [{key: remote_address}], token_bucket: {max_tokens: 5, tokens_per_fill: 5, fill_interval: 1s}}, "
            "{entries: [{key: plan, value: free}], token_bucket: {max_tokens: 2, fill_interval: 1s}}]")
    config = ENVOY.read_config(_filter(body), "envoy.yaml")
    assert "envoy_descriptor_matches" not in {f.lint for f in config.findings}
    assert [(lim.name, lim.policy, lim.key, lim.scope) for lim in config.limits] == [
        ("rl", Policy(50, 1.0, 50), "global", "instance"),
        ("rl [remote_address=*]", Policy(5, 1.0, 5), "ip", "client")]
    assert any("descriptor [plan=free]" in n and "not simulated" in n for n in config.notes)


def test_a_route_bucket_without_the_filter_in_the_chain_is_ignored_by_envoy():
    text = BOOTSTRAP.read_text().replace("          - name: envoy.filters.http.local_ratelimit\n", "          - name: other\n")
    found = _findings(text)["envoy_filter_in_chain"]
    assert found == ["envoy.yaml:24 (static_resources.listeners[0].filter_chains[0].filters[0].typed_config.route_config"
                     ".virtual_hosts[0].routes[0].typed_per_filter_config.envoy.filters.http.local_ratelimit): "
                     "http_local_rate_limiter (prefix /foo): typed_per_filter_config names envoy.filters.http.local_ratelimit, "
                     "which no http_filters entry (or HTTP_FILTER patch) in this file inserts: Envoy ignores the route's bucket"]


def test_per_connection_mode_and_the_local_cluster_share():
    per_conn = ENVOY.read_config(_filter(f"token_bucket: {{max_tokens: 5, fill_interval: 1s}}, filter_enabled: {ON}, "
                                         f"filter_enforced: {ON}, local_rate_limit_per_downstream_connection: true"))
    assert [(lim.key, lim.scope) for lim in per_conn.limits] == [("ip", "connection")]
    assert any("a bucket per downstream connection, not per client" in n for n in per_conn.notes)
    config = ENVOY.read_config(_with_local_cluster(3), "envoy.yaml")
    assert [(lim.key, lim.scope) for lim in config.limits] == [("global", "fleet")]
    assert config.approximate is not None
    [finding] = [f for f in config.findings if f.lint == "envoy_cluster_share"]
    assert "3 local cluster members and max_tokens 2" in finding.problem and "every request is refused" in finding.problem


def _with_local_cluster(members: int) -> str:
    endpoints = ", ".join(["{endpoint: {}}"] * members)
    return _filter(f"token_bucket: {{max_tokens: 2, fill_interval: 1s}}, filter_enabled: {ON}, filter_enforced: {ON}, "
                   "local_cluster_rate_limit: {}") + f"""  clusters:
  - name: local
    load_assignment:
      endpoints:
      - lb_endpoints: [{endpoints}]
cluster_manager: {{local_cluster_name: local}}
"""


@pytest.mark.parametrize(("text", "message"), [
    (_filter("filter_enabled: {default_value: {numerator: 100}}"),
     "no envoy.filters.http.local_ratelimit with a token_bucket: the file limits nothing"),
    (_filter("token_bucket: {max_tokens: 5, fill_interval: 1s}, token_buckets: 3"),
     "envoy.yaml:10 (static_resources.listeners[0].filter_chains[0].filters[0].typed_config.http_filters[0].typed_config"
     ".token_buckets): token_buckets: not a field of"),
    (_filter("token_bucket: {max_tokens: 5, fill_interval: 10ms}"), "fill_interval '10ms': a protobuf Duration"),
    (_filter("token_bucket: {max_tokens: 5, fill_interval: 0.01s}"), "Envoy refuses a fill_interval under 50 ms"),
    (_filter("token_bucket: {max_tokens: 0, fill_interval: 1s}"), "max_tokens: 0: a whole number >= 1"),
    ("a: [1,\n", "envoy.yaml:2: not valid YAML"),
])
def test_an_unreadable_file_is_one_line_exit_2_starting_nothing(tmp_path, capsys, text, message):
    path = tmp_path / "envoy.yaml"
    path.write_text(text)
    with pytest.raises(PeerError, match=message[:20].replace("(", r"\(").replace(".", r"\.").replace("[", r"\[")):
        ENVOY.read_config(text, str(path))
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    assert main(["validate", "--config", str(path), "--peer", "envoy"]) == 2
    err = capsys.readouterr().err.strip()
    assert message.replace("envoy.yaml", str(path), 1) in err and len(err.splitlines()) == 1
    assert {p.pid for p in psutil.Process().children(recursive=True)} == before


def test_an_envoy_or_istio_file_is_recognised_without_peer():
    assert [which_peer(p.read_text(), None, str(p)).name for p in (BOOTSTRAP, ISTIO)] == ["envoy", "envoy"]


def test_whom_the_istio_file_would_have_refused_on_an_access_log(tmp_path, capsys):
    """One bucket of 4 for everyone: 3 addresses sending 3 requests each within 0.1 s (no refill
    worth a token: 4 per 60 s). On one pod 4 are admitted and 5 refused, whoever sent them; on the
    manifest's 3 pods (requests dealt round-robin) each pod's bucket sees 3: none refused."""
    rows = [LoggedRequest(T0 + 0.01 * i, f"10.0.0.{i % 3 + 1}") for i in range(9)]
    log = tmp_path / "access.log"
    log.write_text(render(rows, "custom"))
    for replicas, refused in ((["--replicas", "1"], 5), ([], 0)):
        assert main(["validate", "--config", str(ISTIO), *replicas, "--traffic", str(log), "--log-format", CUSTOM,
                     "--json", "-"]) == 0
        [outcome] = json.loads(capsys.readouterr().out)["policies"]
        assert (outcome["requests"], outcome["refused"]) == (9, refused)
