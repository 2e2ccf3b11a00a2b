"""The HAProxy peer: a real haproxy (stick table http_req_rate, deny 429 gt L, from the policy)
in front of a real ``none`` target, its log as the suite's decision log, and its decisions
request by request against its model (haproxy_freq_ctr: denied requests count, periods start
at a key's first request, the rate read is floored)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from contextlib import suppress
from pathlib import Path

import httpx
import psutil
import pyarrow.parquet as pq
import pytest
import yaml
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from contract.schema import DECISION_SCHEMA
from harness.campaign.peers import PEERS, PeerError, model_policy
from harness.campaign.peers.haproxy import haproxy_limit
from harness.cli.main import main
from harness.live.peers import live_peer
from harness.live.peers.haproxy import haproxy_cfg, log_decisions
from harness.live.peers.standalone import mapped_decisions, peer_before_none
from harness.live.supervise import Processes, RunFailed
from harness.processes.ports import free_ports
from targets.algorithms import Policy, build_params, get_algorithm
from tests.recorded import all_logged, peer_model_agrees, planned, suite_model_agrees

ROOT = Path(__file__).resolve().parents[4]
HAVE_HAPROXY = shutil.which("haproxy") is not None
needs_haproxy = pytest.mark.skipif(not HAVE_HAPROXY and os.environ.get("CI", "").lower() != "true",
                                   reason="haproxy not on PATH: install Debian's haproxy package (CI never skips this)")


@pytest.mark.parametrize(("policy", "limit", "period_ms"), [
    (Policy(10, 1), 10, 1000),
    (Policy(100, 60), 100, 60000),
    (Policy(2, 1, 10), 10, 5000),  # no burst of its own: B per B x W / L, the same long-run rate
    (Policy(10, 1, 5), 5, 500),
])
def test_a_policy_becomes_a_request_rate_period_and_a_deny_limit(policy, limit, period_ms):
    h = haproxy_limit(policy)
    assert (h.limit, h.period_ms) == (limit, period_ms)
    assert model_policy("haproxy", policy) == ("haproxy_freq_ctr", Policy(limit, period_ms / 1000))
    cfg = haproxy_cfg(h, port=8081, downstream_port=8082)
    assert f"store http_req_rate({period_ms})" in cfg and f"deny deny_status 429 if {{ sc_http_req_rate(0) gt {limit} }}" in cfg
    assert "bind 127.0.0.1:8081\n" in cfg and "server downstream 127.0.0.1:8082\n" in cfg


@needs_haproxy
@pytest.mark.process
def test_the_generated_config_is_one_haproxy_accepts(tmp_path):
    conf = tmp_path / "haproxy.cfg"
    conf.write_text(haproxy_cfg(haproxy_limit(Policy(2, 1, 10)), port=free_ports(1)[0], downstream_port=9))
    check = subprocess.run([PEERS["haproxy"].executable(), "-c", "-f", str(conf)], capture_output=True, text=True)
    assert check.returncode == 0 and "Configuration file is valid" in check.stdout + check.stderr
    assert "WARNING" not in check.stdout + check.stderr


@pytest.mark.parametrize(("policy", "message"), [
    (Policy(2.5, 1), "limit 2.5 is not a whole number of requests"),
    (Policy(10, 1, 2.5), "burst 2.5 is not a whole number of requests"),
    (Policy(3, 1, 2), "2 requests per 0.666667 s (burst x W / L) is not a whole number of ms"),
])
def test_a_policy_haproxy_cannot_express_is_refused(policy, message):
    with pytest.raises(PeerError, match="peer haproxy: ") as exc:
        PEERS["haproxy"].model(policy)
    assert message in str(exc.value)


def test_the_model_counts_denied_requests_starts_at_the_first_and_floors_the_rate():
    algorithm = get_algorithm("haproxy_freq_ctr")
    params = build_params("haproxy_freq_ctr", Policy(2, 1))
    # 2 per 1000 ms. 10.001: the period starts at 10000 (even ms). 10.9, 10.95: refused, and counted
    # (curr 4). 11.2: rotated (prev 4, tick 11000): 4 x 0.8 + 1 = 4.2 -> refused. 11.8: 4 x 0.2 + 2
    # = 2.8, floored to 2 -> admitted. 13.5: two periods missed, starts over at 13500 -> admitted.
    times = [10.001, 10.5, 10.9, 10.95, 11.2, 11.8, 13.5]
    state, out = None, []
    for t in times:
        decision, state = algorithm.decide(state, t, 1.0, params)
        out.append(decision.allowed)
    assert out == [True, True, False, False, False, True, True]
    assert state == (13500, 1, 0)
    # refusals count: 5 sent by 10.4 (3 refused), then at 11.5 5 x 0.5 + 1 -> refused, where the
    # suite's sliding_window_counter (2 counted) admits: 2 x 0.5 + 1 = 2
    times = [10.0, 10.1, 10.2, 10.3, 10.4, 11.5]
    assert mapped_decisions("haproxy", Policy(2, 1), times, ["k"] * 6) == [True, True, False, False, False, False]
    assert mapped_decisions("haproxy", Policy(2, 1), times, ["k"] * 6, instead="sliding_window_counter")[-1] is True
    # a key first seen at 0.3 s: its period is [0.3, 1.3), not the clock's second
    state = algorithm.decide(None, 0.3, 1.0, params)[1]
    state = algorithm.decide(state, 0.9, 1.0, params)[1]
    assert algorithm.decide(state, 1.2, 1.0, params)[0].allowed is False


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 6), st.sampled_from([0.5, 1.0, 1.001, 3.0]),
       st.lists(st.floats(0.0, 1.5), min_size=1, max_size=30))
def test_the_models_retry_after_is_when_the_next_request_passes(limit, window_s, gaps):
    algorithm, params = get_algorithm("haproxy_freq_ctr"), build_params("haproxy_freq_ctr", Policy(limit, window_s))
    state, t = None, 100.0
    for gap in gaps:
        t += gap * window_s / limit
        decision, state = algorithm.decide(state, t, 1.0, params)
    assume(not decision.allowed)
    assert algorithm.decide(state, t + decision.retry_after_s, 1.0, params)[0].allowed
    if decision.retry_after_s >= 0.002:
        assert not algorithm.decide(state, t + decision.retry_after_s - 0.002, 1.0, params)[0].allowed


@pytest.fixture
def haproxy(tmp_path):
    """haproxy for 2 requests per 1 s in front of a ``none`` target; yields (url, logs, policy);
    afterwards no process of its is left."""
    policy = Policy(2, 1)
    with peer_before_none("haproxy", policy, tmp_path) as (url, logs):
        family = _ours(tmp_path)
        assert len(family) == 1  # -db: one process, no master, in the run's own process group
        yield url, logs, policy
    assert not [p for p in family if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


def _ours(folder: Path) -> list[psutil.Process]:
    """The haproxy processes whose command line names a config under ``folder``."""
    found = []
    for p in psutil.process_iter(["name", "cmdline"]):
        with suppress(psutil.Error):
            if p.info["name"] == "haproxy" and str(folder) in " ".join(p.info["cmdline"] or []):
                found.append(p)
    return found


def _send(http: httpx.Client, url: str, rid: str, key: str | None) -> int:
    headers = {"x-request-id": rid, "x-client-id": f"{key or 'anon'}\tc", "x-client-class": "legit"}
    if key:
        headers["x-api-key"] = key
    return http.get(f"{url}/api/items", headers=headers).status_code


SCHEDULE = [(0.0, "A", 5), (0.0, None, 3), (1.05, "A", 2), (2.55, "A", 3)]
"""(seconds after A's first request, API key or None, requests) at 2 per 1 s."""


def test_the_model_decides_the_hand_computed_schedule():
    # 2 per 1 s, the period starting at A's first request. At 0: 5 on A -> 2 admitted, and all 5
    # counted; 3 without a key, by address -> 2. At 1.05 s (period 2, prev 5, 0.95 of it left):
    # 5 x 0.95 + 1 >= 3 -> both refused: a client that kept knocking stays refused. At 2.55 s
    # (period 3, prev 2, 0.45 left): 2 x 0.45 floored + 1 = 1, + 1 = 2 -> admitted; + 3 -> refused.
    times, keys, ids = planned(SCHEDULE, 100.0)
    decided = dict(zip(ids, mapped_decisions("haproxy", Policy(2, 1), times, keys)))
    assert [decided[f"A-0.0-{i}"] for i in range(5)] == [True] * 2 + [False] * 3
    assert [decided[f"ip-0.0-{i}"] for i in range(3)] == [True] * 2 + [False]
    assert [decided[f"A-1.05-{i}"] for i in range(2)] == [False] * 2
    assert [decided[f"A-2.55-{i}"] for i in range(3)] == [True] * 2 + [False]


@needs_haproxy
@pytest.mark.process
def test_haproxy_decides_as_its_model_on_its_own_times(haproxy):
    url, logs, policy = haproxy
    statuses: dict[str, int] = {}
    start = None
    with httpx.Client(timeout=5) as http:
        for at, key, n in SCHEDULE:
            time.sleep(max(0.0, start + at - time.monotonic()) if start else 0.0)
            for i in range(n):
                rid = f"{key or 'ip'}-{at}-{i}"
                statuses[rid] = _send(http, url, rid, key)
                start = start or time.monotonic()

    table = all_logged(lambda: live_peer("haproxy").decisions(logs, store="zone"), len(statuses))
    assert table.schema == DECISION_SCHEMA
    df = table.to_pandas()
    assert dict(zip(df["request_id"], df["allowed"])) == {rid: s == 200 for rid, s in statuses.items()}
    assert set(df["key"]) == {"A", "127.0.0.1"} and set(df["route"]) == {"GET /api/items"}
    assert set(df["client_id"]) == {"A\tc", "anon\tc"}  # a tab in a header does not shift a field
    assert set(df["source"]) == {"haproxy"} and df["t"].is_monotonic_increasing
    # the model on HAProxy's own times (its ms clock): request by request the same
    peer_model_agrees("haproxy", policy, df)


def test_log_lines_cut_short_or_alerts_are_not_decisions(tmp_path):
    path = tmp_path / live_peer("haproxy").output
    path.write_text("[NOTICE]   (1) : haproxy version is 2.6\n"
                    "1000\t1\t200\t--\tGET\t\\/a\tr1\t-\t-\t-\t10.0.0.1\n"
                    "1001\t3\t429\tPR\tGET\t\\/a\tr2\t-\t-\t-\t10.0.0.1\n"
                    "1002\t1\t429\t--\tGET\t\\/a\tr3\t-\t-\t-\t10.0.0.1\n"  # the downstream's own 429
                    "1003\t2\t200\t--\tGET\n")
    df = log_decisions(path, store="zone").to_pandas()
    assert list(df["request_id"]) == ["r1", "r2", "r3"] and list(df["allowed"]) == [True, False, True]
    assert list(df["t"]) == [1.0, 1.001, 1.002] and set(df["route"]) == {"GET /a"}


PEER_CAMPAIGN = {
    "name": "peer", "policy": {"limit": 20, "window_s": 1}, "algorithms": ["sliding_window_counter"], "peers": ["haproxy"],
    "scenarios": [{"name": "boundary_burst", "params": {"instant": 1, "boundaries": 1, "delta_s": 0.33}}],
    "scale": {"workers": 1, "lead_s": 2.0, "drain_s": 1.0}, "downstream": {"concurrency": 8, "median_ms": 10, "sigma": 0.3},
}


@needs_haproxy
@pytest.mark.process
def test_a_campaign_runs_haproxy_beside_the_suite_and_judges_it_by_the_same_metrics(tmp_path):
    path, out = tmp_path / "peer.yaml", tmp_path / "res"
    path.write_text(yaml.safe_dump(PEER_CAMPAIGN))
    proc = subprocess.run([sys.executable, "run_bench.py", "run", str(path), "--out", str(out), "--no-charts"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "run 2/2 boundary_burst__haproxy  ok  40 sent, " in proc.stdout
    run = out / "runs" / "boundary_burst__haproxy"
    assert "store http_req_rate(1000)" in (run / "haproxy.cfg").read_text()
    info = json.loads((run / "run.json").read_text())
    assert (info["status"], info["algorithm"], info["system"], info["store"]) == ("ok", "haproxy", "haproxy", "zone")
    rows = {r["run"]: r for r in json.loads((out / "summary.json").read_text())["runs"]}
    peer = rows["boundary_burst__haproxy"]
    decisions = pq.read_table(run / "decisions.parquet").to_pandas()
    assert (peer["algorithm"], peer["system"], peer["requests"], peer["rejected"]) == (
        "haproxy", "haproxy", 40, int((~decisions["allowed"]).sum()))
    # in virtual time: 20 at once start the key's period; 20 more 0.33 s later fall in the same
    # period: all refused. Live, HAProxy and the suite's counter each judged on their own times.
    assert info["virtual_over_admission"] == 1.0
    peer_model_agrees("haproxy", Policy(20, 1), decisions)
    suite_model_agrees(out / "runs" / "boundary_burst__sliding_window_counter__memory")
    assert rows["boundary_burst__sliding_window_counter__memory"]["system"] == "suite"
    assert not _ours(out)


@pytest.mark.parametrize(("change", "message"), [
    ({"policy": {"limit": 2.5, "window_s": 1}}, "scenarios[boundary_burst]: peer haproxy: limit 2.5 is not a whole number"),
    ({"scenarios": ["cost_mix"]}, "scenarios[cost_mix]: peer haproxy: requests of cost"),
])
def test_a_campaign_haproxy_cannot_run_exits_2_naming_it_and_starts_nothing(refused_run, change, message):
    assert message in refused_run({**PEER_CAMPAIGN, **change})


@needs_haproxy
@pytest.mark.process
def test_a_haproxy_that_cannot_start_fails_with_its_log_and_leaves_nothing(tmp_path):
    conf = tmp_path / "haproxy.cfg"
    conf.write_text("backend rb\n    stick-table type string size 1k store http_req_rate(fast)\n")
    (tmp_path / "logs").mkdir()
    processes = Processes()
    with pytest.raises(RunFailed) as exc:
        cmd = live_peer("haproxy").command(PEERS["haproxy"].executable(), conf, tmp_path)
        log = tmp_path / "logs" / live_peer("haproxy").output
        processes.start_peer("haproxy", cmd, free_ports(1)[0], log, log)
    assert "haproxy did not start" in str(exc.value) and "http_req_rate" in str(exc.value)
    processes.stop_all()
    assert not _ours(tmp_path)


HAPROXY_FILE = """
global
    log stdout format raw local0
frontend web  # the user's own
    bind :80
    stick-table type ip size 100k expire 30s store http_req_rate(10s),conn_cur
    acl too_fast sc_http_req_rate(0) gt 100
    http-request track-sc0 src
    http-request deny deny_status 429 if too_fast
    default_backend app
"""


@pytest.mark.parametrize(("text", "policy"), [
    (HAPROXY_FILE, Policy(100, 10)),
    (HAPROXY_FILE.replace("    http-request deny deny_status 429 if too_fast",
                          "    http-request deny if { sc0_http_req_rate ge 30 }").replace("(10s)", "(1m)"), Policy(29, 60)),
])
def test_validate_reads_a_users_stick_table_and_deny_rule(text, policy):
    assert PEERS["haproxy"].policy_from_config(text) == policy


@pytest.mark.parametrize(("old", "new", "message"), [
    ("store http_req_rate(10s),conn_cur", "store conn_cur", "no stick-table stores http_req_rate"),
    ("deny deny_status 429 if too_fast", "tarpit if too_fast", "line 9: http-request tarpit on the request rate"),
    ("gt 100", "lt 100", "line 7: validate reads a deny whose only condition is 'sc_http_req_rate(0) gt L'"),
    ("if too_fast", "if too_fast !trusted", "line 9: validate reads a deny whose only condition"),
    ("http_req_rate(10s)", "http_req_rate(ten)", "line 6: http_req_rate(ten): not a HAProxy time"),
    ("track-sc0 src", "track-sc1 src", "line 7: sc_http_req_rate(0) reads sticky counter 0, which no track-sc0 rule tracks"),
])
def test_validate_names_the_line_it_cannot_read(old, new, message):
    with pytest.raises(PeerError, match="haproxy config") as exc:
        PEERS["haproxy"].policy_from_config(HAPROXY_FILE.replace(old, new))
    assert message in str(exc.value)


def test_simulate_predicts_haproxy_by_its_model(capsys):
    args = ["simulate", "--scenario", "boundary_burst", "--limit", "20", "--window", "1", "--json", "-",
            "--algorithm", "haproxy_http_req_rate", "--algorithm", "sliding_window_counter"]
    assert main(args) == 0
    peer, suite = json.loads(capsys.readouterr().out)["runs"]
    assert (peer["algorithm"], peer["system"], suite["system"]) == ("haproxy_http_req_rate", "haproxy", "suite")
    assert peer["params"] == {"limit": 20.0, "window_s": 1.0}
    assert main(["simulate", "--scenario", "boundary_burst", "--limit", "2.5", "--window", "1",
                 "--algorithm", "haproxy_http_req_rate"]) == 2
    assert "peer haproxy: limit 2.5 is not a whole number of requests" in capsys.readouterr().err
