"""validate of an AWS API Gateway CloudFormation/SAM template: its throttling levels read with the
YAML path of every pitfall, each a token bucket (the smallest wins), every simulated figure
labelled approximate and the checks that need exact decisions n/a; bad input one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.campaign.peers import PEERS, PeerError
from harness.campaign.peers.own_file import which_peer
from harness.cli.main import main
from harness.validate.approximate import labelled
from harness.validate.checks import CheckVerdict
from scenarios.access_log.render import CUSTOM, LoggedRequest, render
from targets.algorithms import Policy

EXAMPLE = Path(__file__).resolve().parents[3] / "campaigns" / "configs" / "aws-api-gateway.yaml"
AWS = PEERS["aws-api-gateway"]
T0 = 1_760_000_040.0


def _stage(settings: str, kind: str = "AWS::ApiGateway::Stage") -> str:
    return f"""Resources:
  Prod:
    Type: {kind}
    Properties:
      RestApiId: !Ref Api
{settings}"""


def test_the_documented_template_is_a_stage_bucket_and_a_bucket_per_key():
    config = AWS.read_config(EXAMPLE.read_text(), "t.yaml")
    assert [(lim.name, lim.policy, lim.key, lim.scope) for lim in config.limits] == [
        ("Prod /* *", Policy(100, 1.0, 50), "global", "fleet"), ("Plan per key", Policy(10, 1.0, 20), "api_key", "fleet")]
    assert [(f.lint, f.where) for f in config.findings] == [
        ("aws_burst_below_rate", "t.yaml:18 (Resources.Prod.Properties.MethodSettings[0])")]
    assert config.approximate and "best-effort" in config.approximate
    assert any(n.startswith("t.yaml:32 (Resources.Plan.Properties.Quota): Plan quota: 5000 per 1 days") for n in config.notes)
    assert (config.retry_after, config.reject_status) == (False, 429)


def test_http_api_routes_sam_and_json_templates():
    http = _stage("""      DefaultRouteSettings: {ThrottlingRateLimit: 50, ThrottlingBurstLimit: 100}
      RouteSettings:
        "GET /pets": {ThrottlingRateLimit: 5}""", "AWS::ApiGatewayV2::Stage")
    config = AWS.read_config(http, "h.yaml")
    # the route sets only its rate: its burst is the account's 5,000
    assert [(lim.name, lim.policy) for lim in config.limits] == [
        ("Prod $default", Policy(50, 1.0, 100)), ("Prod GET /pets", Policy(5, 1.0, 5000))]
    assert [f.lint for f in config.findings] == ["aws_scope"]  # no usage plan: every client shares them
    doc = {"Resources": {"Api": {"Type": "AWS::Serverless::Api", "Properties": {"MethodSettings": [
        {"ResourcePath": "/*", "HttpMethod": "*", "ThrottlingRateLimit": 3, "ThrottlingBurstLimit": 3}]}}}}
    assert AWS.read_config(json.dumps(doc), "t.json").limits[0].policy == Policy(3, 1.0, 3)


def test_a_usage_plan_without_throttle_is_named():
    plan = _stage("""      MethodSettings: [{ResourcePath: "/*", HttpMethod: "*", ThrottlingRateLimit: 10, ThrottlingBurstLimit: 10}]
  Plan:
    Type: AWS::ApiGateway::UsagePlan
    Properties:
      Quota: {Limit: 100, Period: WEEK}""")
    found = [(f.lint, f.where) for f in AWS.read_config(plan, "p.yaml").findings]
    assert found == [("aws_usage_plan", "p.yaml:9 (Resources.Plan.Properties)"),
                     ("aws_scope", "p.yaml:6 (Resources.Prod.Properties.MethodSettings[0])")]


def test_approximate_rows_are_labelled_and_exact_ones_n_a():
    rows = [CheckVerdict("a: over_admission", "simulation", "a", "over_admission", 3.0, "3.00×", "over_admission <= 1.25",
                         False, "3x", "burst 1"),
            CheckVerdict("a: legit_rejection_rate", "simulation", "a", "legit_rejection_rate", 0.0, "0.0%", "x", True, "ok"),
            CheckVerdict("lint: x", "lint", None, "x", 0.0, "ok", "no findings", True, "fine")]
    over, legit, lint = labelled(rows, "why")
    assert (over.display, over.passed, over.na, over.suggestion) == ("≈ 3.00×", True, True, None)
    assert over.message == "n/a: the figure needs exact decisions; approximate: why"
    assert (legit.display, legit.na, legit.message) == ("≈ 0.0%", False, "ok (approximate: why)")
    assert lint == rows[2]


@pytest.mark.parametrize(("settings", "message"), [
    ("      MethodSettings: [{ThrottlingRateLimit: 1, ThrottlingBurstLimit: 1, ThrottlingRate: 5}]",
     "t.yaml:6 (Resources.Prod.Properties.MethodSettings[0].ThrottlingRate): ThrottlingRate: not a field validate knows"),
    ("      MethodSettings: [{ThrottlingRateLimit: !Ref Rate, ThrottlingBurstLimit: 1}]",
     "t.yaml:6 (Resources.Prod.Properties.MethodSettings[0].ThrottlingRateLimit): {'Ref': 'Rate'}: validate needs the number"),
    ("      StageName: prod", "t.yaml: no stage, route or usage plan throttling: nothing in the file limits requests"),
])
def test_bad_templates_are_one_line_exit_2(tmp_path, capsys, settings, message):
    path = tmp_path / "t.yaml"
    path.write_text(_stage(settings))
    with pytest.raises(PeerError):
        AWS.read_config(path.read_text(), str(path))
    assert main(["validate", "--config", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert message.replace("t.yaml", str(path), 1) in err and len(err.splitlines()) == 1


def test_recognised_without_peer():
    assert which_peer(EXAMPLE.read_text(), None, str(EXAMPLE)).name == "aws-api-gateway"


def test_whom_a_stage_bucket_would_have_refused_on_an_access_log(tmp_path, capsys):
    """A stage of 1/s, burst 2, one bucket for every client: 5 requests from 5 addresses within
    0.04 s take the 2 tokens; 3 refused (a refill of 0.04 token in between), whoever sent them."""
    path = tmp_path / "t.yaml"
    path.write_text(_stage("      MethodSettings: [{ThrottlingRateLimit: 1, ThrottlingBurstLimit: 2}]"))
    log = tmp_path / "access.log"
    log.write_text(render([LoggedRequest(T0 + 0.01 * i, f"10.0.0.{i + 1}") for i in range(5)], "custom"))
    assert main(["validate", "--config", str(path), "--traffic", str(log), "--log-format", CUSTOM, "--json", "-"]) == 0
    captured = capsys.readouterr()
    [outcome] = json.loads(captured.out)["policies"]
    assert (outcome["requests"], outcome["refused"]) == (5, 3)
    assert "every refusal count is approximate: AWS documents token-bucket targets" in captured.err.replace("\n", " ")


@pytest.mark.slow
def test_the_documented_template_s_verdict(capsys):
    assert main(["validate", "--config", str(EXAMPLE), "--json", "-"]) == 1
    doc = json.loads(capsys.readouterr().out)
    rows = {c["name"]: c for c in doc["checks"]}
    assert [n for n, c in rows.items() if c["na"]] == ["Prod: abusive_admission", "Prod: over_admission",
                                                        "Plan-per-key: abusive_admission", "Plan-per-key: over_admission"]
    assert not rows["lint: aws_burst_below_rate"]["passed"] and rows["lint: aws_usage_plan"]["passed"]
    assert rows["Plan-per-key: legit_rejection_rate"]["display"] == "≈ 0.0%"
    assert any(n.startswith("every simulated figure is approximate: AWS documents") for n in doc["notes"])
