"""``validate --url --live`` measures before it judges: a suite target served as a black box on
loopback (a real process, a clock-aligned fixed window of 10 per 1 s, keyed by API key when one is
sent, else by the client's address), judged by the claims made about it.

The claim rows are pure functions of one session, so one session judges a true claim and two
lies; the session's figures are recomputed on the times the target recorded deciding (its
decision log), never on the client's clock, which a busy machine makes late.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator

import pytest
import yaml

from harness.campaign.policy_file import PolicyFile, parse_policy
from harness.cli.main import main
from harness.judge.endpoint import KeySpec
from harness.judge.verdict import judge
from harness.judge.virtual import VirtualEndpoint
from harness.processes.target import TargetProcess, start_target
from harness.validate.measured import Caps, claim_verdicts, measure
from targets.algorithms import Policy
from tests.recorded import client_answers, limiter_dated, logged, recorded_verdict

pytestmark = pytest.mark.process  # every test here starts processes

L, W = 10, 1.0
DECISION_LOG = "decisions.parquet"
CAPS = Caps(max_requests=1000, max_rate=500.0, max_wait_s=10.0)


def claim(algorithm: str = "fixed_window", limit: float = L, window_s: float = W, key: str = "ip") -> str:
    return (f"name: claim\nroutes: [{{name: GET /api/items}}]\nlimits: [{{name: api, key: {key}, "
            f"algorithm: {algorithm}, limit: {limit:g}, window_s: {window_s:g}}}]\n")


def policy(**kw) -> PolicyFile:
    return parse_policy(yaml.safe_load(claim(**kw)), "claim.yaml")


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TargetProcess]:
    logs = tmp_path_factory.mktemp("url-target")
    served = start_target(["--algorithm", "fixed_window", "--limit", str(L), "--window", str(W), "--service-ms", "0",
                           "--decision-log", str(logs / DECISION_LOG)], log_dir=logs)
    try:
        yield served
    finally:
        served.stop()


def test_a_true_claim_passes_keyed_by_address_with_every_request_logged_by_role(target, tmp_path, capsys):
    path, out = tmp_path / "claim.yaml", tmp_path / "out"
    path.write_text(claim())
    main(["validate", str(path), "--url", f"{target.url}/api/items", "--live", "--json", "-", "--out", str(out)])
    live = {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"] if c["kind"] == "live"}
    measured = {k: v for k, v in live.items() if k.startswith("live: api: ")}
    assert set(measured) == {"live: api: limit", "live: api: window", "live: api: model", "live: api: worst case"}
    assert all("claimed a fixed window of 10 per 1 s" in v["message"] or "the claim allows" in v["message"]
               for v in measured.values()), measured
    # the claim rows on the session the command logged, dated by the target's own decision log
    sent = client_answers(out / "judge-client.csv")
    dated = limiter_dated(sent, logged(target.stderr_path.parent / DECISION_LOG, sent))
    recorded = {r.name: (r.passed, r.message) for r in claim_verdicts(policy(), recorded_verdict(None, dated), dated)}
    assert set(recorded) == set(measured) and all(passed for passed, _ in recorded.values()), recorded
    assert all(live[f"live: {n}"]["passed"] for n in ("refusal status", "refusal body", "retry after", "no store"))
    with (out / "judge-client.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert rows[0]["role"] == "reach" and {"learn", "probe", "hunt-first-edge"} <= {r["role"] for r in rows}
    reach_address = rows[0]["address"]
    assert reach_address != "127.0.0.1" and all(r["address"] != reach_address for r in rows[1:])  # its own key
    assert "127.0.0.1" not in {r["address"] for r in rows}  # no request on a key under test but its own


def test_lies_fail_naming_what_was_measured_keyed_by_api_key(target):
    client, endpoint = measure(f"{target.url}/api/items", KeySpec("X-API-Key"), CAPS)
    sent = [s.answer for s in endpoint.log]
    answers = limiter_dated(sent, logged(target.stderr_path.parent / DECISION_LOG, sent))
    v = recorded_verdict(client, answers)
    assert len({a.key for a in answers}) >= 4 and all(a.key.startswith("judge-") for a in answers)

    def rows(**kw) -> dict[str, tuple[bool, str]]:
        return {r.name: (r.passed, r.message) for r in claim_verdicts(policy(key="api_key", **kw), v, answers)}

    true = rows()
    assert all(passed for passed, _ in true.values()), true
    twice = rows(limit=2 * L)
    assert not twice["live: api: limit"][0] and twice["live: api: window"][0]
    assert twice["live: api: limit"][1].startswith(
        "claimed a fixed window of 20 per 1 s aligned to the clock; measured: behaves like a fixed window of 10 per ")
    assert not twice["live: api: model"][0]
    six = rows(window_s=6 * W)
    assert not six["live: api: window"][0] and not six["live: api: model"][0]
    assert "claimed a fixed window of 10 per 6 s" in six["live: api: window"][1]
    assert "decisions" in six["live: api: window"][1]  # the fingerprint's agreement, with its count
    peer = rows(algorithm="limits_fixed_window")  # a peer model is a claim too: clock edges are not first hits
    assert not peer["live: api: model"][0] and "aligned to the clock" in peer["live: api: model"][1]


def test_a_peer_model_claim_cannot_run_on_a_suite_target(tmp_path, capsys):
    path = tmp_path / "claim.yaml"
    path.write_text(claim(algorithm="limits_fixed_window"))
    assert main(["validate", str(path), "--live"]) == 2
    err = capsys.readouterr().err.strip()
    assert "limits[api].algorithm: a peer model no suite target runs" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize(("model", "served", "true", "lies"), [
    ("token_bucket", Policy(10, 1, 5), {"limit": 10, "window_s": 1, "burst": 5},
     [{"limit": 20, "window_s": 1, "burst": 5}, {"limit": 10, "window_s": 1, "burst": 3}]),
    ("limits_fixed_window", Policy(20, 10), {"limit": 20, "window_s": 10},
     [{"limit": 40, "window_s": 10}, {"limit": 20, "window_s": 60}]),
])
def test_in_virtual_time_true_claims_pass_and_lies_fail(model, served, true, lies):
    """The suite's models standing in for the endpoint on a virtual clock (no headers: measured,
    not read): the claim rows on the very decisions the session recorded."""
    endpoint = VirtualEndpoint(model, served, headers=False)
    v = judge(endpoint, max_wait_s=120)
    answers = [s.answer for s in endpoint.log]

    def passed(**kw) -> dict[str, bool]:
        text = f"name: c\nroutes: [{{name: GET /api/items}}]\nlimits: [{{name: api, key: ip, algorithm: {model}, " + \
               ", ".join(f"{k}: {x:g}" for k, x in kw.items()) + "}]\n"
        return {r.name.removeprefix("live: api: "): r.passed
                for r in claim_verdicts(parse_policy(yaml.safe_load(text), "c.yaml"), v, answers)}

    assert all(passed(**true).values()), (v.best.sentence(), passed(**true))
    for lie in lies:
        rows = passed(**lie)
        assert not rows["model"] and not all(rows.values()), (lie, rows)
