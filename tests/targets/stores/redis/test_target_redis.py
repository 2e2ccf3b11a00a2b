"""The Redis store wired into real targets, over HTTP, against redis-servers of our own: shared
decisions across nodes, the outage (fallback answers, counted, one log line each way) and the
recovery without restarting anything, the decision log's source, and bad Redis config at start."""

from __future__ import annotations

import struct
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pandas as pd
import pytest
import redis
import yaml

from harness.processes.redis_server import RedisServer
from harness.processes.target import start_target
from tests.poll import until

pytestmark = pytest.mark.process  # every test here starts processes

ROOT = Path(__file__).resolve().parents[4]


@pytest.fixture
def own_redis():
    with RedisServer() as server:
        yield server


@pytest.fixture
def targets(tmp_path):
    started = []

    def start(config: dict, n: int = 1):
        nodes = []
        for _ in range(n):
            name = f"node-{len(started) + 1}"
            path = tmp_path / f"{name}.yaml"
            path.write_text(yaml.safe_dump({**config, "node": name, "decision_log": {
                "path": str(tmp_path / f"decisions-{name}.parquet"), "flush_every_s": 0.2}}))
            nodes.append(start_target(["--config", str(path)], log_dir=tmp_path / "logs"))
            started.append(nodes[-1])
        return nodes

    yield start
    for target in started:
        target.stop()


def config(url: str, **store) -> dict:
    return {"algorithm": "fixed_window", "limit": 40, "window_s": 600, "downstream": {"service_time": {"median_ms": 0}},
            "store": {"name": "redis", "url": url, **store}}


def statuses(urls: list[str], n: int, key: str = "k") -> list[int]:
    """``n`` concurrent GETs dealt round-robin over ``urls``."""
    def one(i: int) -> int:
        return httpx.get(f"{urls[i % len(urls)]}/api/items", headers={"x-api-key": key}, timeout=10).status_code

    with ThreadPoolExecutor(16) as pool:
        return list(pool.map(one, range(n)))


def test_two_nodes_sharing_redis_admit_exactly_the_limit(own_redis, targets, tmp_path):
    nodes = targets(config(own_redis.url, nodes=2, timeout_s=1.0), n=2)  # generous: a slow machine, not a fallback
    got = statuses([t.url for t in nodes], 100)
    for t in nodes:
        t.stop()
    log = pd.concat([pd.read_parquet(p) for p in tmp_path.glob("decisions-*.parquet")])
    assert len(log) == 100 and set(log["source"]) == {"redis"} and log["adaptive_limit"].isna().all()
    assert set(log["node"]) == {"node-1", "node-2"} and set(log["store"]) == {"redis"}
    # exactly the limit in each clock-aligned window the decisions were recorded in (a busy moment
    # may spread the 100 over a window's edge: then each window admits its own 40)
    windows = (log["t"] // 600).astype(int)
    per_window = log.groupby(windows)["allowed"].agg(["sum", "size"])
    assert (per_window["sum"] == per_window["size"].clip(upper=40)).all(), per_window
    assert got.count(200) == int(log["allowed"].sum()) and got.count(429) == 100 - got.count(200)
    assert len(per_window) > 1 or got.count(200) == 40


def test_outage_falls_back_is_counted_and_recovers_without_restart(own_redis, targets):
    (node,) = targets(config(own_redis.url, nodes=2, retry_s=0.2, timeout_s=1.0))  # generous: a slow machine
    assert statuses([node.url], 10).count(200) == 10  # 10 of 40 spent in Redis
    own_redis.stop()
    during = statuses([node.url], 30)
    # the fallback is the shared limit split over 2 nodes: 20 per window, every request answered
    assert during.count(200) == 20 and during.count(429) == 10
    counters = httpx.get(f"{node.admin_url}/_bench/counters").json()["limits"]["per-client"]["redis"]
    assert counters["down"] and counters["outages"] == 1 and counters["degraded_decisions"] == 30
    assert counters["by_source"] == {"redis": 10, "fallback": 30}
    metrics = httpx.get(f"{node.admin_url}/metrics").text
    assert 'ratelimit_redis_outages{limit="per-client"} 1.0' in metrics
    assert 'ratelimit_decisions_by_source_total{limit="per-client",source="fallback"} 30.0' in metrics
    own_redis.start()  # same port, empty: the shared window starts again

    def recovered() -> bool:
        statuses([node.url], 1, key="probe")
        return not httpx.get(f"{node.admin_url}/_bench/counters").json()["limits"]["per-client"]["redis"]["down"]

    assert until(recovered, 10), "no recovery"
    assert statuses([node.url], 5).count(200) == 5
    counters = httpx.get(f"{node.admin_url}/_bench/counters").json()["limits"]["per-client"]["redis"]
    assert counters["by_source"]["redis"] >= 16 and counters["outages"] == 1
    stderr = node.stderr()
    assert stderr.count("outage started") == 1 and stderr.count("outage ended") == 1


def test_fail_closed_rejects_during_the_outage(own_redis, targets):
    (node,) = targets(config(own_redis.url, fail_open=False, retry_s=5))
    own_redis.stop()
    response = httpx.get(f"{node.url}/api/items", headers={"x-api-key": "k"})
    assert response.status_code == 429 and response.headers["retry-after"] == "5"


def run_target(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "targets", "--port", "1", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)


@pytest.mark.parametrize(("args", "message"), [
    (["--store", "redis", "--redis-url", "redis://127.0.0.1:1/0"], "cannot use Redis there"),
    (["--store", "redis", "--redis-url", "http://nope"], "is not a Redis URL"),
    (["--store", "redis"], "store: url: the redis store needs a URL"),
])
def test_bad_redis_config_exits_2_with_one_line(args, message, monkeypatch):
    monkeypatch.delenv("REDIS_URL", raising=False)
    proc = run_target(*args)
    assert proc.returncode == 2 and message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_cluster_mode_against_a_plain_redis_exits_2(redis_server, tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"store": {"name": "redis", "url": redis_server.url, "cluster": True}}))
    proc = run_target("--config", str(path))
    assert proc.returncode == 2 and "not a cluster" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_redis_url_comes_from_the_environment(redis_server, tmp_path, monkeypatch):
    monkeypatch.setenv("REDIS_URL", redis_server.url)
    target = start_target(["--store", "redis"], log_dir=tmp_path)
    try:
        counters = httpx.get(f"{target.admin_url}/_bench/counters").json()
        assert counters["store"] == "redis" and counters["limits"]["per-client"]["redis"]["mode"] == "shared"
    finally:
        target.stop()


def test_a_later_layer_rejecting_gives_back_the_earlier_concurrency_slot(own_redis, targets):
    """login: login-ip admits (a slot taken in Redis), login-account rejects; the login-ip slot
    must come back (concurrency keys have no TTL: a lost slot is lost for good)."""
    cfg = {**config(own_redis.url, timeout_s=1.0), "algorithm": "concurrency", "limit": 1,
           "downstream": {"service_time": {"median_ms": 2000, "sigma": 0}},  # overlaps on a busy machine too
           "limits": [{"name": "login-ip", "scope": "ip", "routes": ["login"], "limit": 5},
                      {"name": "login-account", "scope": "account", "routes": ["login"], "limit": 1}]}
    [node] = targets(cfg)

    def login() -> int:
        return httpx.post(node.url + "/login", json={"username": "alice"}, timeout=10).status_code

    with ThreadPoolExecutor(2) as pool:
        held = pool.submit(login)
        while httpx.get(node.admin_url + "/_bench/counters", timeout=10).json()["downstream"]["in_flight"] == 0:
            time.sleep(0.01)  # until the first login holds alice's only slot (for 2 s)
        assert login() == 429  # login-ip admitted it, login-account rejected it
        assert held.result() == 200
    # a concurrency count back at zero is deleted: a login-ip key left behind is a lost slot
    leftover = {k: struct.unpack("<d", redis.Redis.from_url(own_redis.url).get(k)) for k in
                redis.Redis.from_url(own_redis.url).keys("*login-ip*")}
    assert leftover == {}
