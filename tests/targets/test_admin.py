"""The admin endpoints live on their own loopback listener, check every field, and a client
that goes away frees its downstream slot (real targets over real HTTP)."""

from __future__ import annotations

import socket

import httpx
import pytest

from tests.poll import until

ADMIN_CALLS = [("GET", "/_bench/counters", None), ("GET", "/_bench/state?limit=per-client&key=api_key:victim", None),
               ("POST", "/_bench/health", {"health": "outage"})]


@pytest.fixture(scope="module")
def target(module_start):
    return module_start("--algorithm", "fixed_window", "--limit", "1000", "--window", "60", "--concurrency", "32",
                        "--service-ms", "10", "--service-sigma", "0")


def admin(target, method, path, body=None):
    return httpx.request(method, target.admin_url + path, json=body, timeout=10)


@pytest.mark.parametrize(("method", "path", "body"), ADMIN_CALLS)
def test_the_api_port_does_not_serve_admin_endpoints(target, method, path, body):
    assert httpx.request(method, target.url + path, json=body, timeout=10).status_code == 404
    assert admin(target, "GET", "/_bench/counters").json()["downstream"]["health"] == "healthy"


def test_the_admin_port_serves_admin_endpoints_only(target):
    httpx.get(target.url + "/api/items", headers={"x-api-key": "victim"}, timeout=10).raise_for_status()
    assert admin(target, "GET", "/_bench/state?limit=per-client&key=api_key:victim").json()["state"][1] == 1
    assert admin(target, "GET", "/api/items").status_code == 404
    assert admin(target, "GET", "/_bench/counters").json()["limits"]["per-client"]["decisions"] >= 1


@pytest.mark.parametrize(("body", "field", "words"), [
    ({"health": "degraded", "factor": 1e300}, "factor", "less than or equal to 1000"),
    ({"health": "degraded", "factor": 0.5}, "factor", "greater than or equal to 1"),
    ({"health": "degraded", "factor": "NaN"}, "factor", "finite"),
    ({"health": "ill"}, "health", "'healthy', 'degraded', 'recovered' or 'outage'"),
    ({"health": "healthy", "factor": 5}, None, "factor applies to health 'degraded' only"),
    ({"health": "degraded", "speed": 2}, "speed", "Extra inputs are not permitted"),
    ({}, "health", "Field required"),
])
def test_a_bad_health_update_is_422_naming_the_field_and_changes_nothing(target, body, field, words):
    r = admin(target, "POST", "/_bench/health", body)
    assert r.status_code == 422
    [error] = r.json()["detail"]
    assert words in error["msg"] and (field is None or error["loc"][-1] == field), error
    assert admin(target, "GET", "/_bench/counters").json()["downstream"]["health"] == "healthy"


def test_an_overlong_state_query_is_422(target):
    assert admin(target, "GET", "/_bench/state?limit=per-client&key=" + "k" * 2000).status_code == 422


def _counters(target):
    return admin(target, "GET", "/_bench/counters").json()["downstream"]


def test_clients_that_go_away_free_their_downstream_slots(start):
    """40 requests held by a 1000x degraded downstream (200 s each), their clients gone: every
    slot and queue place is given back, and the next request is served."""
    target = start("--algorithm", "fixed_window", "--limit", "1000", "--window", "60", "--concurrency", "32",
                   "--service-ms", "200", "--service-sigma", "0")
    admin(target, "POST", "/_bench/health", {"health": "degraded", "factor": 1000}).raise_for_status()
    clients = [socket.create_connection(("127.0.0.1", target.port)) for _ in range(40)]
    try:
        for sock in clients:
            sock.sendall(b"GET /api/items HTTP/1.1\r\nHost: t\r\n\r\n")
        assert until(lambda: _counters(target)["in_flight"] == 32 and _counters(target)["waiting"] == 8, 20), "all 40 held"
    finally:
        for sock in clients:
            sock.close()
    assert until(lambda: _counters(target)["in_flight"] == 0 and _counters(target)["waiting"] == 0, 20), "slots given back"
    admin(target, "POST", "/_bench/health", {"health": None}).raise_for_status()
    assert httpx.get(target.url + "/api/items", timeout=10).status_code == 200
    assert "Traceback" not in target.stderr()
