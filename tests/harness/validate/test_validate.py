"""`run_bench.py validate`: the shipped policies fail (or pass) for the reasons they state, with
measured suggestions; invalid files exit 2 naming the field; JSON and JUnit outputs hold."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness.cli.main import main

POLICIES = Path(__file__).resolve().parents[3] / "campaigns" / "policies"

# file -> {failing check: substrings its suggestion must contain (the numbers are measured and seeded)}
BAD = {
    "bad-fixed-window.yaml": {
        "lint: fixed_window_capacity": ["2.00× the limit", "gcra with burst 75 gives 1.12×"],
        "api: over_admission": ["fixed_window admits up to 2L", "gcra with burst 75 gives 1.12×"],
    },
    "bad-burst-below-page-load.yaml": {
        "lint: burst_below_page_load": ["token bucket capacity 5 < page load of 8", "100.0% of page loads see a 429",
                                        "burst >= 8 gives 0.0%"],
        "api: legit_rejection_rate": ["37.5% of legitimate requests", "burst >= 8 gives 0.0%"],
        "api: page_load_429_rate": ["100.0% of page loads", "burst >= 8 gives 0.0%"],
    },
    "bad-ip-behind-proxy.yaml": {
        "lint: ip_key_behind_proxy": ["20 users at peak share one key and 49.0%", "keys each client: 0.0%"],
    },
    "bad-ipv6-no-prefix.yaml": {
        "lint: ipv6_without_prefix": ["ipv6_prefix: 64 keys the /64 as one client: 1.06×"],
    },
    "bad-local-not-divided.yaml": {
        "lint: local_limit_not_divided": ["4.26× the limit", "divide_by_nodes: true (150 per node) gives 1.06×"],
        "api: over_admission": ["divide_by_nodes: true (150 per node) gives 1.06×"],
        "api: abusive_admission": ["4.25×", "gives 1.06×"],
        "api: node_down_over_admission": ["3.19×", "gives 0.80×"],
    },
    "bad-naive-store.yaml": {
        "lint: naive_store": ["2.00× the limit", "store.mode: shared (one Lua script per decision) gives 1.06×"],
        "api: over_admission": ["gives 1.06×"],
    },
    "bad-login-ip-only.yaml": {
        "lint: login_single_key": ["add a per-account limit (key: user) of 10 per 60 s: that account gets 1.00×"],
    },
    "bad-cacheable-429.yaml": {
        "lint: cacheable_429": ["Cache-Control: no-store"],
        "lint: retry_after_missing": ["median wait under attack: 'api' 0.1 s"],
    },
    "bad-global-key.yaml": {
        "api: legit_rejection_rate": ["the abusive client at 5x the limit spends it for all",
                                      "key: ip (a limit per client) gives 0.0%"],
        "api: page_load_429_rate": ["key: ip (a limit per client) gives 0.0%"],
    },
    "bad-fail-closed.yaml": {
        "api: store_down_legit_rejection_rate": ["fail-closed rejects every request", "100.0%",
                                                 "fallback: local_divided (limit/4 per node) gives 0.0%"],
    },
}
MESSAGES = {  # the finding itself (not only the suggestion) carries the measured number
    "bad-ipv6-no-prefix.yaml": ("lint: ipv6_without_prefix", "rotating through 100 addresses of its /64 gets 5.12×"),
    "bad-login-ip-only.yaml": ("lint: login_single_key", "a botnet of 100 addresses gets 5.70× the per-IP limit"),
    "bad-cacheable-429.yaml": ("lint: cacheable_429", "to every client for 60 s"),
}


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict]:
    code = main(["validate", *args, "--json", "-"])
    return code, json.loads(capsys.readouterr().out)


def leading_comment(path: Path) -> str:
    lines = path.read_text(encoding="utf-8").splitlines()
    return " ".join(line.lstrip("# ") for line in lines if line.startswith("#"))


def test_every_shipped_bad_policy_is_covered() -> None:
    assert {p.name for p in POLICIES.glob("bad-*.yaml")} == set(BAD)


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_policy_fails_for_its_stated_reason(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = run_json(capsys, str(POLICIES / name))
    assert code == 1 and doc["passed"] is False
    failed = {c["name"]: c for c in doc["checks"] if not c["passed"]}
    assert set(failed) == set(BAD[name])
    comment = leading_comment(POLICIES / name)
    for check, fragments in BAD[name].items():
        assert check.split(": ")[1] in comment, f"{name}'s comment does not state {check}"
        for fragment in fragments:
            assert fragment in failed[check]["suggestion"], (check, failed[check]["suggestion"])
    if name in MESSAGES:
        check, fragment = MESSAGES[name]
        assert fragment in failed[check]["message"]


def test_good_policy_passes(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    junit = tmp_path / "validate.xml"
    code, doc = run_json(capsys, str(POLICIES / "good.yaml"), "--junit", str(junit))
    assert code == 0 and doc["passed"] is True and doc["failures"] == 0
    assert set(doc) == {"policy", "file", "passed", "failures", "checks"}
    fields = {"name", "kind", "limit", "metric", "value", "display", "threshold", "passed", "message", "suggestion", "na"}
    assert all(set(c) == fields for c in doc["checks"])
    assert {c["kind"] for c in doc["checks"]} == {"lint", "simulation"}
    names = [c["name"] for c in doc["checks"]]
    assert "api: over_admission" in names and "login-account: store_down_over_admission" in names
    # the file's own threshold replaces the default for every limit
    assert next(c for c in doc["checks"] if c["name"] == "api: over_admission")["threshold"] == "over_admission <= 1.1"

    suite = ET.parse(junit).getroot().find("testsuite")
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == names
    assert suite.get("tests") == str(len(names)) and suite.get("failures") == "0"


def table_rows(out: str) -> dict[str, list[str]]:
    """The verdict table's rows: check name -> [measured, threshold]."""
    return {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:4]] for line in out.splitlines()
            if line.startswith("│")}


def test_junit_reports_each_failure(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    junit = tmp_path / "validate.xml"
    assert main(["validate", str(POLICIES / "bad-naive-store.yaml"), "--junit", str(junit)]) == 1
    capsys.readouterr()
    cases = ET.parse(junit).getroot().iter("testcase")
    failures = {c.get("name"): c.find("failure") for c in cases if c.find("failure") is not None}
    assert set(failures) == set(BAD["bad-naive-store.yaml"])
    assert "gives 1.06×" in failures["api: over_admission"].text


def test_table_output_shows_verdict_and_suggestions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(POLICIES / "bad-burst-below-page-load.yaml")]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "burst >= 8 gives 0.0%" in out
    # measured and threshold in one unit: 37.5% against < 0.1% (the file's 0.001), 1.01× against <= 1.25×
    rows = table_rows(out)
    assert rows["api: legit_rejection_rate"] == ["37.5%", "< 0.1%"]
    assert rows["api: over_admission"] == ["1.01×", "<= 1.25×"]
    assert rows["lint: burst_below_page_load"] == ["1 finding", "no findings"]
    # one fix for the lint and the two checks it explains: printed once, under all three
    assert out.count("burst >= 8") == 1
    tail = out[out.index("└"):].splitlines()[1:]
    assert [line.split(":")[0] for line in tail[:3]] == ["lint", "api", "api"] and tail[3].startswith("  -> ")


def test_each_fix_is_printed_once_under_the_failures_it_fixes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(POLICIES / "bad-local-not-divided.yaml")]) == 1
    out = capsys.readouterr().out
    assert out.count("divide_by_nodes: true (150 per node) gives 1.06×") == 1
    assert out.count("divide_by_nodes: true (150 per node) gives 0.80×") == 1


@pytest.mark.parametrize(("body", "field"), [
    ("limits:\n  - {name: api, key: ip, algorithm: token_bucket, limit: 10, window_s: -1}\n",
     "limits[api].window_s: Input should be greater than 0"),
    ("limits:\n  - {name: api, key: device, algorithm: gcra, limit: 10, window_s: 1}\n", "limits[api].key:"),
    ("limits:\n  - {name: api, key: ip, algorithm: gcra, limit: 10, window_s: 1, colour: red}\n",
     "limits[api].colour: unknown field; valid: name, key, routes, algorithm"),
    ("limits:\n  - {name: api, key: ip, algorithm: gcra, limit: 10, window_s: 1, routes: [b]}\n",
     "limits[api].routes[b]: unknown route 'b'"),
    ("limits:\n  - {name: api, key: ip, algorithm: gcra, limit: 10, window_s: 1}\n"
     "thresholds: ['over_admission <= 2', 'over_admision < 2']\n", "thresholds[over_admision < 2]: unknown metric 'over_admision'"),
    ("limits:\n  - {name: api, key: ip, algorithm: gcra, limit: 10, window_s: 1}\n"
     "thresholds: ['nope.over_admission <= 2']\n", "thresholds[nope.over_admission <= 2]: unknown limit 'nope'"),
    ("limits:\n  - {name: api, key: ip, algorithm: gcra, limit: 10, window_s: 1}\nstore: {mode: shared}\n",
     "store.mode: a memory store lives in one process"),
])
def test_invalid_policy_exits_2_naming_the_field(body: str, field: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("name: x\nroutes: [{name: a}]\n" + body, encoding="utf-8")
    assert main(["validate", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and field in lines[0], lines


def test_a_nodes_share_is_divided_after_the_parameter_overrides() -> None:
    """As the target's local store does (local_params): an overridden capacity is shared out too."""
    from harness.campaign.policy_file import Limit, params_of

    limit = Limit(name="per-user", key="user", algorithm="token_bucket", limit=100, window_s=60,
                  params={"capacity": 40})
    whole, share = params_of(limit), params_of(limit, 4)
    assert (whole.capacity, share.capacity) == (40, 10)
    assert share.rate == pytest.approx(100 / 60 / 4)


def test_a_window_opened_by_each_keys_first_request_fails_capacity_on_its_own_edge(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """limits' fixed window (slowapi's default) meets the clock's boundary burst mid-window and holds
    it to L; bursts at its own edge (the edge hunt) get 2L - 1 through: 1.99x of 600 per 60 s."""
    text = (POLICIES / "bad-fixed-window.yaml").read_text().replace("algorithm: fixed_window", "algorithm: limits_fixed_window")
    policy = tmp_path / "first-hit.yaml"
    policy.write_text(text)
    assert main(["validate", str(policy)]) == 1
    rows = table_rows(capsys.readouterr().out)
    assert rows["api: over_admission"] == ["2.00×", "<= 1.25×"]
