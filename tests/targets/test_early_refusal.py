"""A refusal answered by the HTTP protocol as the head is parsed (targets/early_refusal.py) is the
answer the app gives, byte for byte, and logged the same; the app never sees it.

In process: the real protocol and app on a transport that records what is written, one clock for
both (the decision times, hence the quota headers, then agree exactly); the same requests in the
same reads, once decided by the protocol and once by the middleware. Over HTTP on a real target:
the two paths' 429s field for field, a connection that goes on after a refusal (with a body, kept
alive, pipelined) and one that closes as asked, and the log's rows."""

from __future__ import annotations

import asyncio
import math
import re
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
import uvicorn
from uvicorn.server import ServerState

from benchmarks.raw_http import connect, read_answers, request
from targets.app import create_app
from targets.config import load
from targets.connection_caps import ConnectionCaps
from targets.early_refusal import RefusingHttpToolsProtocol

CLOCK = 1_800_000_000.25
LIMIT = ["--algorithm", "fixed_window", "--limit", "2", "--window", "86400", "--service-ms", "0"]
"""Two items a day per client; a report (cost 20 by default) can never be admitted."""


class Wire:
    """The transport end the protocol writes to."""

    def __init__(self) -> None:
        self.out = bytearray()
        self.closed = False

    def write(self, data: bytes) -> None:
        if not self.closed:
            self.out += data

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.9", 5555)}.get(name, default)

    def pause_reading(self) -> None: ...

    def resume_reading(self) -> None: ...

    def can_write_eof(self) -> bool:
        return False


READS = [  # one connection, read by read
    request(),
    request() + request(),  # the second is pipelined behind the first: the middleware decides it
    request(),
    request("POST", "/api/reports", b"x" * 100),  # a cost the limit never admits; its body dropped
    request("HEAD"),
    request(path="/api/search"),
    request(path="/nowhere"),  # unrouted: counted too
    request(path="/healthz"),  # never limited
    request("POST", "/api/reports", b"0123456789")[:-5],  # the body's end comes with the next read
    b"56789" + request(x_request_id="given"),
    request(connection="close"),  # answered, then closed
]
HTTP_10 = b"GET /api/items HTTP/1.0\r\nHost: t\r\n\r\n"


class Served:
    """One target app (two items a day per client) behind the protocol, on in-memory connections."""

    def __init__(self, decide: bool) -> None:
        overrides = {"algorithm": "fixed_window", "limit": 2, "window_s": 86400,
                     "downstream": {"service_time": {"median_ms": 0}}}
        app = create_app(load(None, overrides))
        self.decider = app.state.target.decider
        self.decider.log = SimpleNamespace(rows=[])  # the rows as appended, no file
        self.calls = 0

        async def counted(scope: Any, receive: Any, send: Any) -> None:
            self.calls += scope["type"] == "http"
            await app(scope, receive, send)

        self.protocol = RefusingHttpToolsProtocol.bounded(32768, 10.0, ConnectionCaps(),
                                                          decider=self.decider if decide else None)
        self.config = uvicorn.Config(counted, http=self.protocol, ws="none", proxy_headers=False, lifespan="off",
                                     log_level="warning")
        self.state = ServerState()
        self.state.default_headers = [(b"date", b"Fri, 15 Jan 2027 08:00:00 GMT"), (b"server", b"uvicorn")]

    def connect(self) -> tuple[Wire, Any]:
        wire, conn = Wire(), self.protocol(config=self.config, server_state=self.state, app_state={})
        conn.connection_made(wire)
        return wire, conn

    async def settle(self) -> None:
        """Every request cycle started has ended."""
        while self.state.tasks:
            await asyncio.wait(list(self.state.tasks))


async def _serve(decide: bool) -> tuple[list[bytes], list[bool], list[tuple], int]:
    """Per connection what was written and whether it closed, the log's rows, the app's calls."""
    served, wires = Served(decide), []
    for reads in (READS, [HTTP_10, request()]):
        wire, conn = served.connect()
        for data in reads:
            if not wire.closed:
                conn.data_received(data)
            await served.settle()
        conn.connection_lost(None)
        wires.append(wire)
    return [bytes(w.out) for w in wires], [w.closed for w in wires], served.decider.log.rows, served.calls


def _run(decide: bool, monkeypatch: Any) -> tuple[list[bytes], list[bool], list[tuple], int]:
    monkeypatch.setattr(time, "time", lambda: CLOCK)
    return asyncio.run(_serve(decide))


def test_the_protocols_refusals_are_the_apps_byte_for_byte_and_never_reach_it(monkeypatch):
    early, app = _run(True, monkeypatch), _run(False, monkeypatch)
    written, closed, rows, calls = early
    assert written == app[0] and closed == app[1] == [True, True]
    statuses = [int(s) for s in re.findall(rb"HTTP/1\.1 (\d+) ", written[0])]
    assert statuses == [200, 200, 429, 429, 429, 429, 429, 429, 200, 429, 429, 429]
    assert written[0].count(b"connection: close\r\n") == 1 and written[1].count(b"connection: close\r\n") == 1
    assert re.findall(rb"HTTP/1\.1 (\d+) ", written[1]) == [b"429"]  # HTTP/1.0: closed after it
    # the same rows but the decision's own duration; one row per limited request, decided once
    assert [r[:10] + r[11:] for r in rows] == [r[:10] + r[11:] for r in app[2]]
    assert [r[7] for r in rows] == [True, True, *[False] * 10]
    assert rows[-3][12] == "given" and [r[14] for r in rows[3:8]] == ["items", "reports", "items", "search", "unrouted"]
    assert calls == 4 and app[3] == 13  # the protocol's refusals never reached the app
    never, head = written[0].split(b"HTTP/1.1 ")[5:7]
    assert b"cost-exceeds-limit" in never and b"retry-after" not in never
    assert head.endswith(b"\r\n\r\n") and b"content-length: 197\r\n" in head  # HEAD: no body


def test_a_client_that_does_not_read_gets_no_refusal_while_the_transport_pushes_back():
    """Past the transport's high-water mark, a refusal waits in uvicorn's cycle for the drain (the
    middleware decides it), as any answer does: one written at once would pile up unread."""
    async def run() -> tuple[int, int, int, int]:
        served = Served(decide=True)
        wire, conn = served.connect()
        conn.data_received(request() + request())
        await served.settle()
        answered = len(wire.out)
        conn.pause_writing()  # the client reads nothing: its buffer is full
        conn.data_received(request())
        for _ in range(5):
            await asyncio.sleep(0)
        waiting = len(wire.out)
        conn.resume_writing()
        await served.settle()
        return answered, waiting, wire.out.count(b"HTTP/1.1 429 "), served.calls

    answered, waiting, refused, calls = asyncio.run(run())
    assert waiting == answered and refused == 1 and calls == 3


def _answer_fields(head: bytes, body: bytes, row: pd.Series) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """An answer's header fields in order and its body, with the date and the wait (which moves
    with the moment each was decided) checked against the request's logged decision and masked."""
    wait = b"%d" % max(1, math.ceil(row["retry_after_s"]))
    fields = [tuple(line.split(b": ", 1)) for line in head.split(b"\r\n") if line]
    masked = []
    for name, value in fields:
        if name == b"date":
            value = b"D" if re.fullmatch(rb"\w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d GMT", value) else value
        elif name in (b"retry-after", b"x-ratelimit-reset"):
            value = b"W" if value == wait else value
        elif name == b"ratelimit":
            value = value.replace(b";t=" + wait, b";t=W")
        masked.append((name, value))
    return masked, body.replace(b"retry after %s s" % wait, b"retry after W s").replace(b'"retry_after_s":' + wait, b'"retry_after_s":W')


def test_over_http_the_two_paths_answer_and_log_alike_and_the_connection_goes_on(start, tmp_path: Path):
    target = start(*LIMIT, "--decision-log", str(tmp_path / "decisions.parquet"))
    with connect(target.port, timeout_s=5, source="127.0.0.5") as sock:
        sock.sendall(request(x_request_id="a1") + request(x_request_id="a2"))
        assert read_answers(sock, 2).statuses == [200, 200]
        sock.sendall(request(x_request_id="early"))  # nothing pending on the connection: the protocol decides
        early = read_answers(sock, 1)
        sock.sendall(request(path="/healthz") + request(x_request_id="app"))  # queued behind /healthz: the app
        app = read_answers(sock, 2)
        sock.sendall(request("POST", "/api/reports", b"y" * 5000, x_request_id="body")[:-1000])
        time.sleep(0.05)  # answered before its body has all come
        sock.sendall(b"y" * 1000 + request(x_request_id="p1") + request(x_request_id="p2"))
        after = read_answers(sock, 3)
        sock.sendall(request(connection="close", x_request_id="last"))
        last = read_answers(sock, 2)
    assert early.statuses == [429] and app.statuses == [200, 429]
    assert after.statuses == [429, 429, 429] and not after.closed
    assert last.statuses == [429] and last.closed and b"connection: close" in last.heads[0]
    target.stop()
    log = pd.read_parquet(tmp_path / "decisions.parquet").set_index("request_id")
    assert list(log.index) == ["a1", "a2", "early", "app", "body", "p1", "p2", "last"]  # each decided once
    assert _answer_fields(early.heads[0], early.bodies[0], log.loc["early"]) == \
        _answer_fields(app.heads[1], app.bodies[1], log.loc["app"])
    same = ["node", "algorithm", "store", "limit_name", "key", "cost", "allowed", "remaining", "route", "source"]
    assert log.loc["early", same].tolist() == log.loc["app", same].tolist() == \
        ["node-1", "fixed_window", "memory", "per-client", "ip:127.0.0.5", 1.0, False, 0.0, "items", "memory"]
