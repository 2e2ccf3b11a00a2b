"""validate of Cloudflare rate limiting rules (Rulesets API JSON or Terraform's cloudflare_ruleset):
a counter per period per characteristics value per data center, blocked for the mitigation
timeout once tripped (fixed_block), every figure approximate; bad input one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.campaign.peers import PEERS, PeerError
from harness.campaign.peers.own_file import which_peer
from harness.cli.main import main
from scenarios.access_log.render import CUSTOM, LoggedRequest, render
from targets.algorithms import Policy

CONFIGS = Path(__file__).resolve().parents[3] / "campaigns" / "configs"
JSON_EXAMPLE, TF_EXAMPLE = CONFIGS / "cloudflare-ruleset.json", CONFIGS / "cloudflare-ruleset.tf"
CF = PEERS["cloudflare"]
T0 = 1_760_000_040.0


def _rules(**ratelimit: object) -> str:
    return json.dumps({"rules": [{"description": "r", "action": "block", "ratelimit": {
        "characteristics": ["cf.colo.id", "ip.src"], "period": 10, "requests_per_period": 2, **ratelimit}}]}, indent=1)


def test_the_documented_rule_in_json_and_terraform():
    for path, where in ((JSON_EXAMPLE, "j:14 (rules[0].ratelimit.mitigation_timeout)"),
                        (TF_EXAMPLE, "j: resource.cloudflare_ruleset.login.rules[0].ratelimit.mitigation_timeout")):
        config = CF.read_config(path.read_text(), "j")
        [lim] = config.limits
        assert (lim.name, lim.policy, lim.key, lim.scope, lim.algorithm, lim.params) == (
            "login", Policy(100, 60.0), "ip", "client", "fixed_block", {"block_s": 600.0})
        assert [(f.lint, f.where) for f in config.findings] == [("cloudflare_timeout", where)]
        assert "600 s, 10x the period" in config.findings[0].problem
        assert config.approximate and "not whether it is fixed or sliding" in config.approximate
        assert config.ipv6_prefix == 64


@pytest.mark.parametrize(("ratelimit", "lints", "key"), [
    ({"characteristics": ["cf.colo.id"]}, ["cloudflare_per_colo", "cloudflare_key"], "global"),
    ({"characteristics": ["cf.colo.id", 'http.request.headers["x-api-key"]']}, ["cloudflare_key"], "api_key"),
    ({"mitigation_timeout": 0}, ["cloudflare_timeout"], "ip"),
    ({"mitigation_timeout": 10}, [], "ip"),
])
def test_each_pitfall_is_named_by_its_path(ratelimit, lints, key):
    config = CF.read_config(_rules(**{"mitigation_timeout": 10, **ratelimit}), "c.json")
    assert [f.lint for f in config.findings] == lints and config.limits[0].key == key
    assert all(f.where.startswith("c.json:") and "(rules[0].ratelimit." in f.where for f in config.findings)


def test_a_zero_timeout_is_the_plain_counter():
    [lim] = CF.read_config(_rules(mitigation_timeout=0), "c.json").limits
    assert (lim.algorithm, CF.model(lim.policy)) == (None, ("sliding_log", Policy(2, 10.0)))


def test_whom_the_rule_would_have_refused_on_an_access_log(tmp_path, capsys):
    """2 per 10 s per IP, blocked 30 s: 10.0.0.1 at 0, 1 admitted; 2 trips the block (until 32);
    12 refused though its period would admit it; 33 admitted. 10.0.0.2 at 5: its own counter. 2 of 6 refused."""
    path = tmp_path / "rules.json"
    path.write_text(_rules(mitigation_timeout=30))
    log = tmp_path / "access.log"
    rows = [LoggedRequest(T0 + t, "10.0.0.1") for t in (0, 1, 2, 12, 33)] + [LoggedRequest(T0 + 5, "10.0.0.2")]
    log.write_text(render(sorted(rows, key=lambda r: r.t), "custom"))
    assert main(["validate", "--config", str(path), "--traffic", str(log), "--log-format", CUSTOM, "--json", "-"]) == 0
    captured = capsys.readouterr()
    [outcome] = json.loads(captured.out)["policies"]
    assert (outcome["requests"], outcome["refused"]) == (6, 2)
    assert "every refusal count is approximate: Cloudflare documents" in captured.err.replace("\n", " ")


@pytest.mark.parametrize(("text", "message"), [
    (_rules(score_per_period=5), "c.json:13 (rules[0].ratelimit.score_per_period): score_per_period: not a ratelimit field"),
    (_rules(characteristics=["ip.src"]), "c.json:7 (rules[0].ratelimit.characteristics): characteristics ['ip.src']: "
                                         "Cloudflare requires cf.colo.id"),
    (_rules(period=0), "c.json:11 (rules[0].ratelimit.period): period 0: a whole number of at least 1"),
    ('{"rules": [{"action": "block", "expression": "true"}]}', "c.json: no rule with a ratelimit"),
])
def test_bad_rules_are_one_line_exit_2(tmp_path, capsys, text, message):
    path = tmp_path / "c.json"
    path.write_text(text)
    with pytest.raises(PeerError):
        CF.read_config(text, str(path))
    assert main(["validate", "--config", str(path), "--peer", "cloudflare"]) == 2
    err = capsys.readouterr().err.strip()
    assert message.replace("c.json", str(path), 1) in err and len(err.splitlines()) == 1


def test_recognised_without_peer():
    assert [which_peer(p.read_text(), None, str(p)).name for p in (JSON_EXAMPLE, TF_EXAMPLE)] == ["cloudflare"] * 2


def test_the_documented_rule_s_verdict(capsys):
    assert main(["validate", "--config", str(JSON_EXAMPLE), "--json", "-"]) == 1
    doc = json.loads(capsys.readouterr().out)
    rows = {c["name"]: c for c in doc["checks"]}
    assert [n for n, c in rows.items() if c["na"]] == ["login: abusive_admission", "login: over_admission"]
    assert [n for n, c in rows.items() if not c["passed"]] == [
        "lint: cloudflare_timeout", "lint: cacheable_429", "lint: retry_after_missing", "login: nat_legit_rejection_rate"]
    assert rows["login: legit_rejection_rate"]["display"] == "≈ 0.0%"
