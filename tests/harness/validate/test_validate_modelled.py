"""validate --config of products modelled but not run here: an envoyproxy/ratelimit descriptor
file, a Kong declarative config, a caddy-ratelimit JSON config. Each docs example read into the
limits its source says, judged by the exact model with the verdict naming the model and the
version, its pitfalls named by YAML/JSON path, and --live refused in one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.campaign.peers import PEERS
from harness.cli.main import main
from scenarios.access_log.render import CUSTOM, LoggedRequest, render
from targets.algorithms import Policy

CONFIGS = Path(__file__).parents[3] / "campaigns" / "configs"
T0 = 1_760_000_040.0  # a minute edge of the epoch


def _verdict(capsys, path: Path, *more: str) -> tuple[int, dict, dict]:
    code = main(["validate", "--config", str(path), *more, "--json", "-"])
    doc = json.loads(capsys.readouterr().out)
    return code, {c["name"]: c for c in doc["checks"]}, doc


def test_envoy_ratelimit_readme_example_1(capsys):
    """database=users and database=default, 500 per second each: one counter per value, shared by
    the fleet (Redis); epoch windows let 2L through (measured 2.00x); the two never meet in one
    request, so the refusals-counted lint passes."""
    config = PEERS["envoy-ratelimit"].read_config((CONFIGS / "envoy-ratelimit.yaml").read_text())
    assert [(lim.name, lim.policy, lim.key, lim.scope, lim.line) for lim in config.limits] == [
        ("database-users", Policy(500, 1), "api_key", "fleet", 6), ("database-default", Policy(500, 1), "api_key", "fleet", 12)]
    code, checks, doc = _verdict(capsys, CONFIGS / "envoy-ratelimit.yaml")
    assert code == 1 and doc["notes"][0].startswith(
        "envoyproxy/ratelimit is modelled, not run here (a Go service with no binary in a registry reachable here): "
        "envoy_ratelimit_window is a model of envoyproxy/ratelimit @f2fb1577 (2026-07-05)")
    assert checks["lint: ratelimit_fixed_window"]["message"].startswith(
        f"{CONFIGS / 'envoy-ratelimit.yaml'}:7 (descriptors[0].rate_limit.unit): database=users: 500 per second in "
        "windows aligned to the epoch: up to 1000 pass around an edge (2x)")
    assert checks["lint: ratelimit_refusals_counted"]["passed"] is True
    assert checks["database-users: over_admission"]["display"] == "2.00×"


def test_envoy_ratelimit_readme_example_2_nested_descriptors_spend_each_other():
    """(message_type=marketing, to_number) 5 per day nested, to_number 100 per day: one request
    matches both, so a refusal by one still counts in the other."""
    config = PEERS["envoy-ratelimit"].read_config((CONFIGS / "envoy-ratelimit-messaging.yaml").read_text())
    assert [(lim.name, lim.policy, lim.line) for lim in config.limits] == [
        ("message_type-marketing.to_number", Policy(5, 86400), 9), ("to_number", Policy(100, 86400), 15)]
    [counted] = [f for f in config.findings if f.lint == "ratelimit_refusals_counted"]
    assert counted.fix == "STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=true in the service's environment"


def test_envoy_ratelimit_shadow_unlimited_and_month():
    text = ("domain: d\ndescriptors:\n  - key: remote_address\n    rate_limit: {unit: minute, requests_per_unit: 9}\n"
            "  - key: k\n    shadow_mode: true\n    rate_limit: {unit: second, requests_per_unit: 1}\n"
            "  - key: vip\n    rate_limit: {unlimited: true}\n"
            "  - key: api_key\n    rate_limit: {unit: month, requests_per_unit: 1000}\n")
    config = PEERS["envoy-ratelimit"].read_config(text)
    # the month is modelled, linted and named, but left out of the simulation (it spans 31 days at most)
    assert [(lim.name, lim.policy, lim.key) for lim in config.limits] == [("remote_address", Policy(9, 60), "ip")]
    assert any(n.startswith("line 11: api_key: 1000 per 2.592e+06 s is modelled but not simulated") for n in config.notes)
    found = {f.lint: f for f in config.findings}
    assert found["ratelimit_shadow_mode"].where == "line 6 (descriptors[1].shadow_mode)"
    assert found["ratelimit_shadow_mode"].problem.startswith("k: shadow_mode counts but never refuses")
    assert "a month is 30 days counted from 1970-01-01" in found["ratelimit_calendar"].problem
    assert any("(descriptors[2].rate_limit.unlimited): vip: unlimited: never limited" in n for n in config.notes)


def test_kong_docs_example(capsys):
    """second 5 and hour 1000, limit_by consumer by default (falls back to the address), local."""
    config = PEERS["kong"].read_config((CONFIGS / "kong.yml").read_text())
    assert [(lim.name, lim.policy, lim.key, lim.scope) for lim in config.limits] == [
        ("second", Policy(5, 1), "api_key", "client"), ("hour", Policy(1000, 3600), "api_key", "client")]
    assert (config.reject_status, config.retry_after) == (429, True)
    code, checks, doc = _verdict(capsys, CONFIGS / "kong.yml")
    assert code == 1 and doc["notes"][0].startswith("Kong rate-limiting is modelled, not run here")
    assert checks["lint: kong_limit_by_fallback"]["message"].startswith(
        f"{CONFIGS / 'kong.yml'}:5 (plugins[0].config.limit_by): limit_by consumer (the default): a request without one "
        "is counted by its client address (handler.lua:85)")
    assert checks["second: over_admission"]["display"] == "2.00×"


def test_kong_redis_is_shared_by_the_fleet_and_fails_open(tmp_path, capsys):
    path = tmp_path / "kong.yml"
    path.write_text('_format_version: "3.0"\nservices:\n- name: api\n  plugins:\n  - name: rate-limiting\n    config:\n'
                    "      minute: 60\n      month: 100000\n      policy: redis\n      limit_by: ip\n      error_code: 503\n")
    config = PEERS["kong"].read_config(path.read_text())
    assert [(lim.policy, lim.key, lim.scope) for lim in config.limits] == [(Policy(60, 60), "ip", "fleet")]
    assert any("month: 100000 per 2.592e+06 s is modelled but not simulated" in n for n in config.notes)
    _, checks, _ = _verdict(capsys, path, "--replicas", "3")
    assert checks["lint: kong_fault_tolerant"]["message"].startswith(
        f"{path}:6 (services[0].plugins[0].config): fault_tolerant (default true) with policy redis")
    assert checks["lint: reject_status_429"]["passed"] is False
    assert checks["lint: local_limit_not_divided"]["passed"] is True  # one Redis: 3 nodes share the counters


def test_whom_the_kong_file_would_have_refused_on_an_access_log(tmp_path, capsys):
    """second: 5, keyed by the address (no consumer on a log): 8 requests of one address inside one
    UTC second admit 5 and refuse 3 (never counted), the next second admits again."""
    rows = [LoggedRequest(T0 + 0.1 * i, "1.1.1.1") for i in range(8)] + [LoggedRequest(T0 + 1.2, "1.1.1.1")]
    log = tmp_path / "access.log"
    log.write_text(render(rows, "custom"))
    path = tmp_path / "kong.yml"
    path.write_text('_format_version: "3.0"\nplugins:\n- name: rate-limiting\n  config: {second: 5, limit_by: ip}\n')
    assert main(["validate", "--config", str(path), "--traffic", str(log), "--log-format", CUSTOM, "--json", "-"]) == 0
    [outcome] = json.loads(capsys.readouterr().out)["policies"]
    assert (outcome["requests"], outcome["refused"]) == (9, 3)


def test_caddy_readme_json_example(capsys):
    """Two zones: static 100 per 1 m (1.67/s) is the more permissive, so Caddy checks it first
    (ratelimit.go:102-104); the dynamic zone keys by the connection's address."""
    config = PEERS["caddy"].read_config((CONFIGS / "caddy.json").read_text())
    assert [(lim.name, lim.policy, lim.key) for lim in config.limits] == [
        ("static_example", Policy(100, 60.0), "ip"), ("dynamic_example", Policy(2, 5.0), "ip")]
    assert config.approximate is not None and config.retry_after is True
    code, checks, doc = _verdict(capsys, CONFIGS / "caddy.json")
    assert code == 1 and doc["notes"][0].startswith("caddy-ratelimit is modelled, not run here")
    assert checks["lint: caddy_key_behind_proxy"]["message"].startswith(
        "apps.http.servers.demo.routes[0].handle[0].rate_limits.dynamic_example.key: {http.request.remote.host} is the "
        "connection's address")
    # each zone an exact sliding log, but two zones on one key are approximate: the figure kept, labelled, n/a
    over = checks["dynamic_example: over_admission"]
    assert (over["display"], over["na"]) == ("≈ 1.00×", True)


@pytest.mark.parametrize(("name", "text", "message"), [
    ("rl.yaml", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: fortnight, requests_per_unit: 1}\n",
     "line 4 (descriptors[0].rate_limit.unit): unit 'fortnight'; the service takes SECOND"),
    ("rl.yaml", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 1, replaces: [{name: b}]}\n",
     "line 4 (descriptors[0].rate_limit.replaces): replaces drops another named limit"),
    ("kong.yml", '_format_version: "3.0"\nplugins:\n- name: rate-limiting\n  config: {second: 5, limit_by: service}\n',
     "line 4 (plugins[0].config.limit_by): limit_by service: one counter for every request"),
    ("kong.yml", '_format_version: "3.0"\nplugins:\n- name: rate-limiting\n  config:\n    second: five\n',
     "line 5 (plugins[0].config.second): second: 'five'; Kong counts whole requests"),
    ("caddy.json", '{"handler": "rate_limit", "rate_limits": {"z": {"key": "k", "window": "5x", "max_events": 1}}}',
     "rate_limits.z.window: window '5x' is not a duration"),
])
def test_what_changes_the_limit_and_cannot_be_read_is_named_exit_2(tmp_path, capsys, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    assert main(["validate", "--config", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{path}: {message}" in err and len(err.splitlines()) == 1, err


@pytest.mark.parametrize(("config", "system"), [("envoy-ratelimit.yaml", "envoyproxy/ratelimit"), ("kong.yml", "Kong rate-limiting"),
                                                ("caddy.json", "caddy-ratelimit")])
def test_live_is_refused_in_one_line_for_a_product_that_does_not_run_here(capsys, config, system):
    assert main(["validate", "--config", str(CONFIGS / config), "--live"]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{system} does not run here" in err and len(err.splitlines()) == 1


def test_a_caddyfile_without_the_caddy_binary_asks_for_its_json(tmp_path, capsys, monkeypatch):
    if shutil.which("caddy") is not None:
        monkeypatch.setenv("PATH", "")
    path = tmp_path / "Caddyfile"
    path.write_text(":80\nrate_limit {\n\tzone z {\n\t\tkey {remote_host}\n\t\tevents 2\n\t\twindow 5s\n\t}\n}\n")
    assert main(["validate", "--config", str(path)]) == 2
    assert "a Caddyfile is read through `caddy adapt`, and caddy is not on PATH" in capsys.readouterr().err


def test_a_campaign_naming_a_modelled_product_exits_2_in_one_line(tmp_path, capsys):
    campaign = (CONFIGS.parent / "peers.yaml").read_text().replace(
        "peers: [nginx, nginx-problem, nginx-realip, haproxy]", "peers: [kong]")
    path = tmp_path / "c.yaml"
    path.write_text(campaign)
    assert main(["run", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert "peer kong: Kong rate-limiting does not run here" in err and len(err.splitlines()) == 1


def test_kong_periods_count_only_what_all_admit_on_a_log(tmp_path, capsys):
    """second: 2 and minute: 3 (handler.lua:89-114, 193-216): the 3rd request of a second is refused
    by the second and counted nowhere, so the next second's request is the minute's 3rd (admitted)
    and the one after it is refused by the minute: 2 of 5 refused."""
    offsets = [0.0, 0.1, 0.2, 1.1, 2.1]
    log = tmp_path / "access.log"
    log.write_text(render([LoggedRequest(T0 + dt, "1.1.1.1") for dt in offsets], "custom"))
    path = tmp_path / "kong.yml"
    path.write_text('_format_version: "3.0"\nplugins:\n- name: rate-limiting\n  config: {second: 2, minute: 3, limit_by: ip}\n')
    main(["validate", "--config", str(path), "--traffic", str(log), "--log-format", CUSTOM, "--json", "-"])
    [outcome] = json.loads(capsys.readouterr().out)["policies"]
    assert (outcome["requests"], outcome["refused"]) == (5, 2)
