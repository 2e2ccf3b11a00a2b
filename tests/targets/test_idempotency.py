"""Idempotency keys belong to one client and one route (real HTTP), and their store is bounded
by bytes as well as entries."""

from __future__ import annotations

import asyncio
import socket

import httpx

from targets.config import KeyConfig
from targets.idempotency import ENTRY_OVERHEAD, IdempotencyMiddleware
from targets.keys import KeyPolicy
from tests.poll import until


def _calls(target) -> int:
    return httpx.get(target.admin_url + "/_bench/counters", timeout=10).json()["downstream"]["calls"]


def test_a_key_replays_only_for_its_client_and_route(start):
    target = start("--limit", "1000", "--window", "60", "--cost", "reports=1", "--service-ms", "0")

    def post(path: str, who: str) -> httpx.Response:
        return httpx.post(target.url + path, headers={"x-api-key": who, "idempotency-key": "shared-key"},
                          json={"username": who}, timeout=10)

    alice = post("/api/reports", "alice")
    bob = post("/api/reports", "bob")
    alice_again = post("/api/reports", "alice")
    alice_login = post("/login", "alice")
    assert [r.status_code for r in (alice, bob, alice_again, alice_login)] == [200] * 4
    assert bob.headers.get("idempotent-replayed") is None and bob.json() == {"report": "queued"}  # his own ran
    assert alice_again.headers.get("idempotent-replayed") == "true"
    assert alice_login.headers.get("idempotent-replayed") is None and alice_login.json() == {"ok": True}
    assert _calls(target) == 3  # alice, bob, alice's login; the retry was a replay


async def _ok(scope, receive, send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": b'{"report":"queued"}'})


def test_long_keys_are_bounded_by_bytes():
    """5,000 POSTs with 200-byte keys into a 64 KiB store: never over it, the newest keys replay,
    the oldest run again."""
    bound = 64 * 1024
    middleware = IdempotencyMiddleware(_ok, KeyPolicy(KeyConfig()), max_bytes=bound)
    replayed: list[bool] = []

    async def send(message) -> None:
        if message["type"] == "http.response.start":
            replayed.append((b"idempotent-replayed", b"true") in message["headers"])

    async def post(i: int) -> bool:
        scope = {"type": "http", "method": "POST", "path": "/api/reports", "client": ("127.0.0.1", 1),
                 "headers": [(b"idempotency-key", b"%0200d" % i)]}
        await middleware(scope, None, send)
        return replayed[-1]

    async def flood() -> tuple[list[int], bool, bool]:
        sizes = []
        for i in range(5_000):
            await post(i)
            sizes.append(middleware.bytes)
        return sizes, await post(4_999), await post(0)

    sizes, newest, oldest = asyncio.run(flood())
    assert max(sizes) <= bound and len(middleware.seen) < bound // ENTRY_OVERHEAD
    assert newest and not oldest
    assert middleware.bytes == sum(size for _, size in middleware.seen.values())


def test_a_request_abandoned_by_its_client_runs_again_when_retried(start):
    target = start("--limit", "1000", "--window", "60", "--cost", "reports=1", "--service-ms", "200", "--service-sigma", "0")
    httpx.post(target.admin_url + "/_bench/health", json={"health": "degraded", "factor": 1000}, timeout=10).raise_for_status()

    def downstream() -> dict:
        return httpx.get(target.admin_url + "/_bench/counters", timeout=10).json()["downstream"]

    with socket.create_connection(("127.0.0.1", target.port)) as sock:
        sock.sendall(b"POST /api/reports HTTP/1.1\r\nHost: t\r\nIdempotency-Key: k1\r\nContent-Length: 0\r\n\r\n")
        assert until(lambda: downstream()["in_flight"] == 1, 20)
    assert until(lambda: downstream()["in_flight"] == 0, 20)  # gone: cancelled
    httpx.post(target.admin_url + "/_bench/health", json={"health": None}, timeout=10).raise_for_status()
    retry = httpx.post(target.url + "/api/reports", headers={"idempotency-key": "k1"}, timeout=10)
    assert retry.status_code == 200 and retry.headers.get("idempotent-replayed") is None
    assert downstream()["calls"] == 2
