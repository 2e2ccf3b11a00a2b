"""Several limits on one route, replayed from a log as the target's layered check decides them:
memory limits refuse without spending anywhere, Redis limits spend in turn (hand-computed), a
log's requests dealt to local nodes as a balancer deals them, and a live target's own decisions
equal the replay's on the times the target recorded, request by request."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pandas as pd
import pytest

from harness.campaign.log_traffic import LogOptions, load_traffic
from harness.campaign.policy_file import parse_policy
from harness.processes.target import running_target
from harness.validate.traffic import judge, refusals

T0 = 1_760_000_040.0
LOG_FORMAT = '$msec $remote_addr "$http_x_forwarded_for" "$http_x_api_key" "$request"'
"""A custom format with each request's exact time, its proxy's X-Forwarded-For and its API key."""
CLIENT = "203.0.113.5"
LAYERED = {
    "name": "layered", "keys": {"behind_proxies": True, "trusted_proxies": 1},
    "routes": [{"name": "GET /api/items"}, {"name": "GET /api/search"}],
    "limits": [{"name": "per-client", "key": "api_key", "algorithm": "sliding_log", "limit": 2, "window_s": 60},
               {"name": "per-ip", "key": "ip", "routes": ["GET /api/items"], "algorithm": "sliding_log",
                "limit": 2, "window_s": 2}],
}
PLAN = [(0.0, "k1"), (0.05, "k2"), (0.1, "k3"), (0.15, "k3"), (2.5, "k3"), (2.55, "k3"), (2.6, "k3")]
"""Three API keys behind one client address, on GET /api/items (per-client 2 per 60 s, then
per-ip 2 per 2 s). By hand, in memory: k1 and k2 fill the address's 2; k3 at 0.1 and 0.15 is
refused by per-ip and spends nothing; at 2.5 the address's window has moved on, k3 has its
whole 2 (2.5, 2.55 admitted) and 2.6 is refused by per-client: 3 refused (per-ip 2,
per-client 1). On Redis the two refused requests spent k3's 2 per-client first: 2.5, 2.55 and
2.6 are refused by per-client too: 5 refused."""


def line(t: float, key: str | None, path: str = "/api/items", xff: str = CLIENT) -> str:
    """One LOG_FORMAT line; the time written in full (``repr``: it reads back as the same float)."""
    return f'{t!r} 10.0.0.1 "{xff}" "{key or "-"}" "GET {path} HTTP/1.1"\n'


def judged(tmp_path: Path, text: str, policy: dict) -> list:
    log = tmp_path / "access.log"
    log.write_text(text)
    traffic = load_traffic(log, LogOptions(log_format=LOG_FORMAT))
    parsed = parse_policy(policy, "policy")
    return refusals(traffic, parsed).tolist()


def test_memory_limits_refuse_without_spending_in_the_others(tmp_path: Path) -> None:
    text = "".join(line(T0 + at, key) for at, key in PLAN)
    assert judged(tmp_path, text, LAYERED) == [-1, -1, 1, 1, -1, -1, 0]


def test_redis_limits_spend_in_turn(tmp_path: Path) -> None:
    text = "".join(line(T0 + at, key) for at, key in PLAN)
    on_redis = {**LAYERED, "store": {"backend": "redis"}}
    assert judged(tmp_path, text, on_redis) == [-1, -1, 1, 1, 0, 0, 0]


def test_a_route_one_limit_covers_keeps_its_state_as_decide_does(tmp_path: Path) -> None:
    """GET /api/search is per-client only (one layer: the store's single decide); GET /api/items
    meets both. k1: search, search (k1's 2 spent), items at 1.0 refused by per-client: nothing
    spent on the address, so k2's items at 1.1 and 1.2 are admitted (the address's 2)."""
    text = line(T0, "k1", "/api/search") + line(T0 + 0.5, "k1", "/api/search") + line(T0 + 1.0, "k1")
    text += line(T0 + 1.1, "k2") + line(T0 + 1.2, "k2")
    assert judged(tmp_path, text, LAYERED) == [-1, -1, 0, -1, -1]


def test_local_nodes_are_dealt_every_request_of_the_log(tmp_path: Path) -> None:
    """Two nodes, 2 per 60 s divided: 1 per node. The balancer deals the health check too: k1 at
    0 goes to node 1, the health check to node 2, k1 at 2 to node 1 again: refused."""
    policy = {"name": "nodes", "routes": [{"name": "GET /api/items"}], "nodes": 2,
              "limits": [{"name": "api", "key": "api_key", "routes": ["GET /api/items"], "algorithm": "sliding_log",
                          "limit": 2, "window_s": 60}]}
    text = line(T0, "k1") + line(T0 + 1, None, "/healthz") + line(T0 + 2, "k1")
    assert judged(tmp_path, text, policy) == [-1, -1, 0]


TARGET = """
algorithm: sliding_log
limit: 100
window_s: 60
keys: {trusted_proxies: 1}
limits:
  - {name: per-client, scope: client, routes: [items, search], algorithm: sliding_log, limit: 2, window_s: 60}
  - {name: per-ip, scope: ip, routes: [items], algorithm: sliding_log, limit: 2, window_s: 2}
"""
"""LAYERED as the target's config: the policy file's api_key is the target's client key."""


@pytest.mark.process
def test_a_live_target_decides_as_the_replay_of_its_own_log(tmp_path: Path) -> None:
    """The planned requests (each sent once the one before it is answered) to a real target
    with both memory layers; the access log is written from the times the target recorded. The
    replay's refusals are the target's, request by request (on the planned times they are the
    hand-computed ones above: the limiter's own times decide here)."""
    config = tmp_path / "target.yaml"
    config.write_text(TARGET)
    decisions = tmp_path / "decisions.parquet"
    args = ["--config", str(config), "--decision-log", str(decisions), "--service-ms", "0"]
    with running_target(args, log_dir=tmp_path) as target, httpx.Client(base_url=target.url, timeout=10) as client:
        start = time.monotonic()
        for i, (at, key) in enumerate(PLAN):
            time.sleep(max(0.0, start + at - time.monotonic()))
            client.get("/api/items", headers={"x-api-key": key, "x-forwarded-for": CLIENT, "x-request-id": f"r{i}"})
    rows = pd.read_parquet(decisions)
    assert (rows.groupby("request_id")["t"].nunique() == 1).all()  # a request's layers decide at one time
    ids = [f"r{i}" for i in range(len(PLAN))]
    recorded = rows.groupby("request_id")["t"].first().loc[ids].tolist()
    refused_by = rows[~rows["allowed"]].set_index("request_id")["limit_name"].reindex(ids)
    text = "".join(line(t, key) for t, (_, key) in zip(recorded, PLAN))
    names = [LAYERED["limits"][j]["name"] if j >= 0 else None for j in judged(tmp_path, text, LAYERED)]
    assert names == [None if pd.isna(n) else n for n in refused_by.tolist()]
    [outcome] = judge(load_traffic(tmp_path / "access.log", LogOptions(log_format=LOG_FORMAT)),
                      [parse_policy(LAYERED, "policy")])
    assert outcome.refused == refused_by.notna().sum()
