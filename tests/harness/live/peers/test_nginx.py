"""The NGINX peer: a real nginx (limit_req from the policy) in front of a real ``none`` target,
its access log as the suite's decision log, and its decisions request by request against the
suite's mapped model (token_bucket, capacity = burst + 1 of NGINX's)."""

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

from contract.folder import write_parquet
from contract.schema import DECISION_SCHEMA
from harness.campaign.peers import PEERS, PeerError, model_policy
from harness.campaign.peers.nginx import nginx_limit
from harness.cli.main import main
from harness.live.peers import live_peer
from harness.live.peers.nginx import ACCESS_LOG, ERROR_LOG, access_log_decisions
from harness.live.peers.standalone import mapped_decisions, peer_before_none
from harness.live.supervise import Processes, RunFailed
from harness.processes.ports import free_ports
from targets.algorithms import Policy
from tests.recorded import all_logged, peer_model_agrees, planned, suite_model_agrees

ROOT = Path(__file__).resolve().parents[4]
HAVE_NGINX = shutil.which("nginx") is not None
needs_nginx = pytest.mark.skipif(not HAVE_NGINX and os.environ.get("CI", "").lower() != "true",
                                 reason="nginx not on PATH: install Debian's nginx package (CI never skips this)")


@pytest.mark.parametrize(("limit", "window_s", "burst", "rate", "nginx_burst", "per_s"), [
    (10, 1, 5, "10r/s", 4, 10.0),
    (100, 60, None, "100r/m", 99, 1.666),  # NGINX keeps 1666 thousandths per second
    (120, 60, 1, "2r/s", 0, 2.0),
    (1, 60, 3, "1r/m", 2, 0.016),
])
def test_a_policy_becomes_limit_req_rate_and_excess_burst(limit, window_s, burst, rate, nginx_burst, per_s):
    n = nginx_limit(Policy(limit, window_s, burst))
    assert (n.rate, n.burst, n.rate_per_s) == (rate, nginx_burst, per_s)
    algorithm, mapped = model_policy("nginx", Policy(limit, window_s, burst))
    assert algorithm == "token_bucket"
    assert (mapped.rate, mapped.effective_burst) == pytest.approx((per_s, nginx_burst + 1))


@pytest.mark.parametrize(("policy", "message"), [
    (Policy(7, 9), "7 per 9 s is 0.777778 requests/s; NGINX limit_req takes a whole number of requests per second or per minute"),
    (Policy(10, 1, 2.5), "burst 2.5 is not a whole number"),
])
def test_a_policy_nginx_cannot_express_is_refused(policy, message):
    with pytest.raises(PeerError, match="peer nginx: ") as exc:
        nginx_limit(policy)
    assert message in str(exc.value)


def test_a_missing_binary_is_named(monkeypatch):
    monkeypatch.setenv("PATH", "")
    with pytest.raises(PeerError, match="the nginx binary was not found on PATH"):
        PEERS["nginx"].executable()


@pytest.fixture
def nginx(tmp_path):
    """nginx for 2 requests/s, burst 5 (NGINX burst=4) in front of a ``none`` target; yields
    (url, logs folder, policy); afterwards no process of either is left."""
    policy = Policy(2, 1, 5)
    with peer_before_none("nginx", policy, tmp_path) as (url, logs):
        master = psutil.Process(int((logs / "nginx" / "nginx.pid").read_text()))
        family = [master, *master.children(recursive=True)]
        assert len(family) >= 2  # master and worker, in the peer's own process group
        yield url, logs, policy
    assert not [p for p in family if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


def _send(http: httpx.Client, url: str, rid: str, key: str | None) -> int:
    headers = {"x-request-id": rid, "x-client-id": key or "anon", "x-client-class": "legit"}
    if key:
        headers["x-api-key"] = key
    return http.get(f"{url}/api/items", headers=headers).status_code


SCHEDULE = [(0.0, "A", 8), (0.0, None, 3), (1.6, "A", 5)]
"""(seconds after A's first burst, API key or None, requests) at 2 r/s, burst 5."""


def test_the_mapped_model_decides_the_hand_computed_burst_schedule():
    # 2 r/s, burst 5: a fresh key takes 5 at once; 1.6 s later 3.2 tokens are back (3 admitted);
    # requests without an API key are keyed by the client address: a bucket of their own
    times, keys, ids = planned(SCHEDULE, 100.0)
    decided = dict(zip(ids, mapped_decisions("nginx", Policy(2, 1, 5), times, keys)))
    assert [decided[f"A-0.0-{i}"] for i in range(8)] == [True] * 5 + [False] * 3
    assert [decided[f"A-1.6-{i}"] for i in range(5)] == [True] * 3 + [False] * 2
    assert [decided[f"ip-0.0-{i}"] for i in range(3)] == [True] * 3


@needs_nginx
@pytest.mark.process
def test_nginx_decides_as_its_mapped_model_on_its_own_times(nginx, tmp_path):
    url, logs, policy = nginx
    statuses: dict[str, int] = {}
    start = time.monotonic()
    with httpx.Client(timeout=5) as http:
        for at, key, n in SCHEDULE:
            time.sleep(max(0.0, start + at - time.monotonic()))
            for i in range(n):
                rid = f"{key or 'ip'}-{at}-{i}"
                statuses[rid] = _send(http, url, rid, key)
    assert [statuses[f"ip-0.0-{i}"] for i in range(3)] == [200] * 3  # a fresh address bucket of 5: any timing

    table = all_logged(lambda: access_log_decisions(logs / ACCESS_LOG, store="zone"), len(statuses))
    assert table.schema == DECISION_SCHEMA
    path = tmp_path / "decisions.parquet"
    write_parquet(path, table)
    df = pq.read_table(path).to_pandas()
    assert dict(zip(df["request_id"], df["allowed"])) == {rid: s == 200 for rid, s in statuses.items()}
    assert set(df["key"]) == {"A", "127.0.0.1"} and set(df["route"]) == {"GET /api/items"}
    # the mapped model on NGINX's own decision times: request by request the same
    peer_model_agrees("nginx", policy, df)


PEER_CAMPAIGN = {
    "name": "peer", "policy": {"limit": 20, "window_s": 1}, "algorithms": ["token_bucket"], "peers": ["nginx"],
    "scenarios": [{"name": "boundary_burst", "params": {"instant": 1, "boundaries": 1, "delta_s": 0.33}}],
    "scale": {"workers": 1, "lead_s": 2.0, "drain_s": 1.0}, "downstream": {"concurrency": 8, "median_ms": 10, "sigma": 0.3},
}


def _our_nginx(out: Path) -> list[psutil.Process]:
    """The nginx masters started under ``out`` (their command line names the prefix) and their workers."""
    found = []
    for p in psutil.process_iter(["name", "cmdline"]):
        if p.info["name"] == "nginx" and str(out) in " ".join(p.info["cmdline"] or []):
            with suppress(psutil.Error):
                found += [p, *p.children(recursive=True)]
    return found


@needs_nginx
@pytest.mark.process
def test_a_campaign_runs_nginx_beside_the_suite_and_judges_it_by_the_same_metrics(tmp_path):
    path, out = tmp_path / "peer.yaml", tmp_path / "res"
    path.write_text(yaml.safe_dump(PEER_CAMPAIGN))
    proc = subprocess.run([sys.executable, "run_bench.py", "run", str(path), "--out", str(out), "--no-charts"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "run 2/2 boundary_burst__nginx  ok  40 sent, " in proc.stdout
    run = out / "runs" / "boundary_burst__nginx"
    assert "rate=20r/s" in (run / "nginx.conf").read_text() and "burst=19 nodelay" in (run / "nginx.conf").read_text()
    info = json.loads((run / "run.json").read_text())
    assert (info["status"], info["algorithm"], info["system"], info["store"]) == ("ok", "nginx", "nginx", "zone")
    rows = {r["run"]: r for r in json.loads((out / "summary.json").read_text())["runs"]}
    suite, peer = rows["boundary_burst__token_bucket__memory"], rows["boundary_burst__nginx"]
    assert (suite["algorithm"], suite["system"]) == ("token_bucket", "suite")
    assert (peer["algorithm"], peer["system"]) == ("nginx", "nginx")
    # in virtual time, where the sends are exact: 20 at once, then 20 at the next boundary 0.33 s
    # later: 6.6 tokens back, 14 refused, 1.3x in a second
    assert info["virtual_over_admission"] == 1.3
    # live, each limiter judged on the times it recorded: NGINX by its mapped model, the suite's
    # token bucket by itself, request by request
    decisions = pq.read_table(run / "decisions.parquet").to_pandas()
    peer_model_agrees("nginx", Policy(20, 1), decisions)
    suite_model_agrees(out / "runs" / "boundary_burst__token_bucket__memory")
    assert (peer["requests"], peer["rejected"]) == (40, int((~decisions["allowed"]).sum()))
    client = pq.read_table(run / "client.parquet", filters=[("role", "==", "plan")]).to_pandas()
    assert set(decisions["request_id"]) == set(client["request_id"])
    assert (client.set_index("request_id")["status"] == 429).sort_index().tolist() == \
        (~decisions.set_index("request_id")["allowed"]).sort_index().tolist()
    # what NGINX tells the clients it refuses, asked after the load, in run.json and the report
    assert info["response"]["findings"][1:] == ["no Retry-After: a client cannot tell when to retry",
                                                "no Cache-Control: no-store: a shared cache may serve one client's refusal to others"]
    assert "boundary_burst__nginx: what it tells refused clients: its 429 is text/html" in (out / "report.md").read_text()
    assert "error_page 429 = @rb_429;" in info["response"]["fix"]
    assert not _our_nginx(out)


@pytest.mark.parametrize(("change", "message"), [
    ({"peers": ["nginx", "no-such-peer"]}, "peers: unknown peer 'no-such-peer'; choose from: "),
    ({"policy": {"limit": 7, "window_s": 9}}, "scenarios[boundary_burst]: peer nginx: limit 7 per 9 s is 0.777778 requests/s"),
    ({"scenarios": ["cost_mix"]}, "scenarios[cost_mix]: peer nginx: requests of cost"),
    ({"peers": ["nginx", "nginx"]}, "peers: nginx is listed more than once"),
])
def test_a_peer_campaign_nginx_cannot_run_exits_2_naming_it_and_starts_nothing(refused_run, change, message):
    assert message in refused_run({**PEER_CAMPAIGN, **change})


@needs_nginx
@pytest.mark.process
def test_an_nginx_that_cannot_start_fails_with_its_error_log_and_leaves_nothing(tmp_path):
    conf = tmp_path / "nginx.conf"
    conf.write_text("daemon off;\nevents {}\nhttp { limit_req_zone $binary_remote_addr zone=z:10m rate=fast; }\n")
    processes = Processes()
    with pytest.raises(RunFailed) as exc:
        nginx = live_peer("nginx")
        cmd = nginx.command(PEERS["nginx"].executable(), conf, tmp_path)
        processes.start_peer("nginx", cmd, free_ports(1)[0], tmp_path / "logs" / "nginx.stderr", tmp_path / "logs" / ERROR_LOG)
    assert "nginx did not start" in str(exc.value) and 'invalid rate "rate=fast"' in str(exc.value)
    processes.stop_all()
    assert not _our_nginx(tmp_path)


def test_simulate_predicts_nginx_by_its_mapped_model(capsys):
    args = ["simulate", "--scenario", "boundary_burst", "--limit", "20", "--window", "1", "--json", "-",
            "--algorithm", "nginx_limit_req", "--algorithm", "token_bucket"]
    assert main(args) == 0
    peer, suite = json.loads(capsys.readouterr().out)["runs"]
    assert (peer["algorithm"], peer["system"], suite["system"]) == ("nginx_limit_req", "nginx", "suite")
    assert peer["params"] == {**suite["params"], "capacity": 20.0, "rate": 20.0}  # burst 20 = NGINX burst=19 + 1
    assert (peer["admitted"], peer["over_admission"]) == (suite["admitted"], suite["over_admission"])
    assert main(["simulate", "--scenario", "boundary_burst", "--limit", "7", "--window", "9", "--algorithm", "nginx_limit_req"]) == 2
    assert "peer nginx: limit 7 per 9 s is 0.777778 requests/s" in capsys.readouterr().err
