"""Real targets over real HTTP: 429 semantics, truthful headers, keys, garbage, admin, logs."""

from __future__ import annotations

import itertools
import json
import math
import re
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pyarrow.parquet as pq
import pytest

from contract.schema import DECISION_SCHEMA

DETERMINISTIC = ["fixed_window", "sliding_log", "sliding_window_counter", "sliding_window_ring",
                 "token_bucket", "leaky_bucket", "gcra"]
SMALL = ["--limit", "2", "--window", "1", "--cost", "reports=1", "--cost", "search=1", "--service-ms", "1"]
LAYERED = """
algorithm: fixed_window
limit: 100
window_s: 86400
limits:
  - {name: per-user, scope: user, limit: 3, tiers: {vip: {limit: 6}}}
  - {name: per-tenant, scope: tenant, limit: 8}
  - {name: login-ip, scope: ip, routes: [login], limit: 4}
  - {name: login-account, scope: account, routes: [login], limit: 2}
routes: {reports: {cost: 1}}
"""


@pytest.fixture(scope="module")
def targets(module_start, tmp_path_factory):
    layered = tmp_path_factory.mktemp("cfg") / "layered.yaml"
    layered.write_text(LAYERED)
    argvs = {name: ["--algorithm", name, *SMALL] for name in DETERMINISTIC}
    argvs["fw_day"] = ["--algorithm", "fixed_window", "--limit", "5", "--window", "86400", "--cost", "reports=1"]
    argvs["proxied"] = ["--algorithm", "fixed_window", "--limit", "10", "--window", "86400", "--cost", "reports=1",
                        "--trusted-proxies", "1", "--max-keys", "50", "--service-ms", "0"]
    argvs["layered"] = ["--config", str(layered)]
    for mode in ("draft", "none"):
        argvs[f"headers-{mode}"] = ["--algorithm", "fixed_window", "--limit", "2", "--window", "86400", "--cost", "reports=1",
                                    "--admitted-headers", mode]
    argvs["queue"] = ["--algorithm", "leaky_bucket", "--limit", "10", "--window", "1", "--burst", "1",
                      "--param", "mode=queue", "--param", "max_delay_s=0.5", "--cost", "reports=1", "--service-ms", "0"]
    return module_start.many(argvs)


def get(target, path="/api/items", **headers):
    return httpx.get(target.url + path, headers={k.replace("_", "-"): v for k, v in headers.items()}, timeout=10)


def counters(target):
    return httpx.get(target.admin_url + "/_bench/counters", timeout=10).json()


def state(target, key, limit="per-client", **tier):
    params = {"limit": limit, "key": key, **tier}
    return httpx.get(target.admin_url + "/_bench/state", params=params, timeout=10).json()["state"]


def exhaust(target, **headers):
    """Requests 4 at once until the first 429: the 2-per-second policy refuses within the first
    wave, however slowly a busy machine answers one request after another."""
    with ThreadPoolExecutor(4) as pool:
        for _ in range(12):
            answers = list(pool.map(lambda _: get(target, **headers), range(4)))
            assert {r.status_code for r in answers} <= {200, 429}
            refused = [r for r in answers if r.status_code == 429]
            if refused:
                return refused[0]
    raise AssertionError("no 429")


def test_a_429_carries_every_header(targets):
    r = exhaust(targets["fixed_window"], x_api_key="headers")
    assert r.headers["content-type"] == "application/problem+json"
    body = r.json()
    assert body["status"] == 429 and body["limit"] == "per-client" and body["title"] == "Too Many Requests"
    assert body["type"] and "per-client" in body["detail"]
    assert re.fullmatch(r"[1-9]\d*", r.headers["retry-after"])
    assert body["retry_after_s"] == int(r.headers["retry-after"])
    assert r.headers["cache-control"] == "no-store"
    assert r.headers["ratelimit-policy"] == '"per-client";q=2;w=1'
    assert re.fullmatch(r'"per-client";r=0;t=\d+', r.headers["ratelimit"])
    assert (r.headers["x-ratelimit-limit"], r.headers["x-ratelimit-remaining"]) == ("2", "0")
    assert re.fullmatch(r"\d+", r.headers["x-ratelimit-reset"])


def test_admitted_responses_carry_the_quota_headers(targets):
    r = get(targets["fw_day"], x_api_key="admitted")
    assert r.status_code == 200 and r.json() == {"items": [1, 2, 3]}
    assert r.headers["ratelimit-policy"] == '"per-client";q=5;w=86400'
    assert re.fullmatch(r'"per-client";r=4;t=\d+', r.headers["ratelimit"])
    assert (r.headers["x-ratelimit-limit"], r.headers["x-ratelimit-remaining"]) == ("5", "4")
    assert "retry-after" not in r.headers


@pytest.mark.parametrize("mode", ["draft", "none"])
def test_fewer_headers_on_admitted_responses_and_all_on_a_429(targets, mode):
    target = targets[f"headers-{mode}"]
    admitted = get(target, x_api_key=mode)
    assert admitted.status_code == 200 and "x-ratelimit-remaining" not in admitted.headers
    if mode == "draft":
        assert admitted.headers["ratelimit"].startswith('"per-client";r=1;t=')
    else:
        assert "ratelimit" not in admitted.headers and "ratelimit-policy" not in admitted.headers
    rejected = exhaust(target, x_api_key=mode)
    assert rejected.headers["x-ratelimit-remaining"] == "0" and rejected.headers["ratelimit-policy"] == '"per-client";q=2;w=86400'


def test_a_429_never_reaches_the_downstream(targets):
    target = targets["gcra"]
    before = counters(target)["downstream"]["calls"]
    statuses = [get(target, "/api/search", x_api_key="downstream").status_code for _ in range(12)]
    assert statuses.count(429) > 0
    assert counters(target)["downstream"]["calls"] - before == statuses.count(200)


def test_waiting_exactly_retry_after_is_admitted(targets):
    """Every deterministic algorithm, in parallel."""

    def check(name: str) -> tuple[str, int, int]:
        rejected = exhaust(targets[name], x_api_key=f"retry-{name}")
        time.sleep(int(rejected.headers["retry-after"]))
        return name, int(rejected.headers["retry-after"]), get(targets[name], x_api_key=f"retry-{name}").status_code

    with ThreadPoolExecutor(len(DETERMINISTIC)) as pool:
        results = list(pool.map(check, DETERMINISTIC))
    assert [(name, status) for name, _, status in results] == [(name, 200) for name in DETERMINISTIC], results


def test_remaining_and_reset_agree_with_the_limiter_state(targets):
    target, key = targets["fw_day"], "api_key:truth"
    for n in range(1, 8):
        before = time.time()
        r = get(target, x_api_key="truth")
        after = time.time()
        window, count = state(target, key)
        assert count == min(n, 5)  # rejected requests (n > 5) consume nothing
        assert int(r.headers["x-ratelimit-remaining"]) == 5 - count
        end = (window + 1) * 86400
        assert math.ceil(end - after) <= int(r.headers["x-ratelimit-reset"]) <= math.ceil(end - before)
        assert r.status_code == (200 if n <= 5 else 429)
    bucket = targets["token_bucket"]
    for _ in range(3):
        r = get(bucket, x_api_key="truth")
        credit_us, _updated = state(bucket, key)  # the tokens' worth in µs of refill, at 2 per s
        assert int(r.headers["x-ratelimit-remaining"]) == math.floor(credit_us / 500_000)


def test_layered_limits_tiers_and_the_tenant_quota(targets):
    target = targets["layered"]
    alice = {"x_user": "alice", "x_tenant": "acme"}
    assert [get(target, **alice).status_code for _ in range(4)] == [200, 200, 200, 429]
    r = get(target, **alice)
    assert r.json()["limit"] == "per-user"
    assert r.headers["ratelimit-policy"] == '"per-user";q=3;w=86400'  # a rejection names only the limit hit
    bob = {"x_user": "bob", "x_tenant": "acme", "x_tier": "vip"}
    ok = get(target, **bob)
    assert ok.headers["ratelimit-policy"] == '"per-user";q=6;w=86400, "per-tenant";q=8;w=86400'  # VIP: its own limit
    assert re.fullmatch(r'"per-user";r=5;t=\d+, "per-tenant";r=4;t=\d+', ok.headers["ratelimit"])
    statuses = [get(target, **bob).status_code for _ in range(5)]
    assert statuses == [200, 200, 200, 200, 429]  # the tenant's 8 are used up before bob's 6
    r = get(target, **bob)
    assert r.json()["limit"] == "per-tenant"
    assert state(target, "user:bob", "per-user", tier="vip")[1] == 5  # tenant rejections took nothing from per-user
    assert state(target, "user:alice", "per-user")[1] == 3


def test_login_is_limited_per_account_and_per_ip(targets):
    target = targets["layered"]

    def login(body):
        return httpx.post(target.url + "/login", content=body, headers={"x-forwarded-for": "x"}, timeout=10)

    assert [login(json.dumps({"username": "mallory"})).status_code for _ in range(3)] == [200, 200, 429]
    assert login(json.dumps({"username": "mallory"})).json()["limit"] == "login-account"
    assert [login(json.dumps({"username": u})).status_code for u in ("trent", "peggy")] == [200, 200]
    r = login(json.dumps({"username": "victor"}))
    assert r.status_code == 429 and r.json()["limit"] == "login-ip"  # 4 admitted logins from this address
    assert login(b"{not json").json()["limit"] == "login-ip"  # no account: per IP still applies


def test_spoofed_leftmost_forwarded_for_does_not_change_the_key(targets):
    target = targets["proxied"]
    statuses = [get(target, x_forwarded_for=f"198.51.100.{i}, 203.0.113.9").status_code for i in range(12)]
    assert statuses == [200] * 10 + [429] * 2
    assert state(target, "ip:203.0.113.9")[1] == 10


def test_a_thousand_addresses_in_one_ipv6_64_share_one_key(targets):
    target = targets["proxied"]
    with httpx.Client(base_url=target.url, timeout=10) as client:
        statuses = [client.get("/api/items", headers={"x-forwarded-for": f"2001:db8:7:7:{i:x}:{i * 7 % 65536:x}::1"}).status_code
                    for i in range(1000)]
    assert statuses.count(200) == 10 and statuses.count(429) == 990
    assert state(target, "ip:2001:db8:7:7::/64")[1] == 10


@pytest.mark.parametrize("headers", [
    {"x-forwarded-for": "junk, , ;;, 999.999.1.1"},
    {"x-forwarded-for": "1" * 8192},
    {"x-forwarded-for": "2001:db8:::zz"},
    {"x-forwarded-for": "fe80::1%25eth0"},
    {"x-api-key": "k" * 8192, "x-user": "u" * 8192, "x-tenant": "t" * 8192},
    {"x-api-key": "has space", "x-tier": b"\xe9\xff"},
    {"x-client-class": "martian", "x-request-id": "r" * 8192},
])
def test_garbage_headers_get_a_normal_answer(targets, headers):
    r = get(targets["proxied"], "/api/search", **headers)
    assert r.status_code in (200, 429)
    assert "ratelimit" in r.headers


def test_distinct_keys_stay_within_max_keys_over_http(targets):
    target = targets["proxied"]
    with httpx.Client(base_url=target.url, timeout=10) as client:
        for i in range(400):
            assert client.get("/api/items", headers={"x-forwarded-for": f"192.0.2.{i % 250}, 10.9.{i // 250}.{i % 250}"}).status_code == 200
    limit = counters(target)["limits"]["per-client"]
    assert limit["keys"]["default"] <= 50 and limit["evictions"] >= 350


def test_queue_mode_delays_instead_of_rejecting(targets):
    target = targets["queue"]  # 10/s, burst 1, queue up to 0.5 s
    with ThreadPoolExecutor(4) as pool:
        timings = list(pool.map(lambda _: _timed(target), range(4)))
    statuses = sorted(status for status, _ in timings)
    assert statuses == [200, 200, 200, 200]  # 4 at once: 1 served, 3 queued 0.1-0.3 s
    assert max(seconds for _, seconds in timings) >= 0.2


def _timed(target):
    start = time.perf_counter()
    status = get(target, x_api_key="queue").status_code
    return status, time.perf_counter() - start


def test_healthz_is_never_limited_and_metrics_are_on_the_admin_port_only(targets):
    target = targets["fw_day"]
    assert all(get(target, "/healthz").status_code == 200 for _ in range(20))
    assert get(target, "/metrics", x_api_key="metrics-reader").status_code == 404  # an unrouted API request
    text = httpx.get(target.admin_url + "/metrics", timeout=10).text
    assert re.search(r'ratelimit_decisions_total\{limit="per-client"\} \d', text)
    assert re.search(r'ratelimit_rejections_total\{limit="per-client"\} \d', text)
    assert "downstream_in_flight" in text


def test_admin_sets_downstream_health(targets):
    target = targets["fw_day"]
    r = httpx.post(target.admin_url + "/_bench/health", json={"health": "degraded", "factor": 3}, timeout=10)
    assert r.json() == {"health": "degraded", "factor": 3.0}
    assert counters(target)["downstream"]["health"] == "degraded"
    assert httpx.post(target.admin_url + "/_bench/health", json={"health": "ill"}, timeout=10).status_code == 422
    failed = counters(target)["downstream"]["failed"]
    httpx.post(target.admin_url + "/_bench/health", json={"health": "outage"}, timeout=10)
    r = httpx.get(target.url + "/api/items", headers={"x-api-key": "outage-probe"}, timeout=10)
    assert r.status_code == 503 and "retry-after" not in r.headers  # admitted, then failed fast
    assert counters(target)["downstream"]["failed"] == failed + 1
    httpx.post(target.admin_url + "/_bench/health", json={"health": None}, timeout=10)
    assert counters(target)["downstream"]["health"] == "healthy"


def test_decision_log_has_one_row_per_request_after_sigterm(start, tmp_path):
    path = tmp_path / "decisions.parquet"
    target = start("--algorithm", "token_bucket", "--limit", "20", "--window", "86400", "--cost", "reports=1",
                   "--decision-log", str(path), "--service-ms", "0")
    sent = []
    with httpx.Client(base_url=target.url, timeout=10) as client:
        for i in range(60):
            rid = f"req-{i}"
            client.request("POST" if i % 3 == 0 else "GET", "/api/reports" if i % 3 == 0 else "/api/items",
                           headers={"x-request-id": rid, "x-client-class": "legit" if i % 2 else "abusive"})
            sent.append(rid)
        client.get("/healthz")  # never limited: no row
    assert target.stop() in (0, -15)  # uvicorn re-raises SIGTERM after its graceful shutdown
    table = pq.read_table(path)
    assert table.schema.equals(DECISION_SCHEMA)
    rows = table.to_pylist()
    assert sorted(r["request_id"] for r in rows) == sorted(sent)
    assert sum(r["allowed"] for r in rows) == 20
    assert {r["route"] for r in rows} == {"items", "reports"} and {r["client_class"] for r in rows} == {"legit", "abusive"}
    assert all(r["ideal_allowed"] is None and r["decision_us"] > 0 for r in rows)
    # requests sent one after the other: each was read off the connection before it was decided,
    # and after the previous one was decided
    ordered = sorted(rows, key=lambda r: int(r["request_id"].split("-")[1]))
    assert all(r["arrived_t"] <= r["t"] for r in ordered)
    assert all(a["t"] <= b["arrived_t"] for a, b in itertools.pairwise(ordered))


def test_an_idle_keep_alive_connection_outlives_uvicorns_default(targets):
    """uvicorn closes a connection idle for 5 s by default; a load generator that warmed its
    connections before a later burst would find them gone. The target keeps them."""
    def local_port(response: httpx.Response) -> int:
        return response.extensions["network_stream"].get_extra_info("client_addr")[1]

    keep = httpx.Limits(keepalive_expiry=60)  # httpx too drops idle connections after 5 s by default
    with httpx.Client(base_url=targets["fw_day"].url, timeout=10, limits=keep) as client:
        before = local_port(client.get("/healthz"))
        time.sleep(6)
        assert local_port(client.get("/healthz")) == before
