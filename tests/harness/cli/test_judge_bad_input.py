"""`judge` on endpoints it cannot judge: one line naming why, exit 2, the client log not written,
nothing sent past the caps, the partial measurement in ``--json`` (a real HTTP server on loopback
playing each misbehaviour; raw socket servers for answers that never end)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler

import pytest

from harness.cli.main import main
from tests.http_stub import serving


class Misbehaving(BaseHTTPRequestHandler):
    """/ok admits everything, /fail answers 503, /auth 401, /forbidden 403, /login-first a redirect to
    /login, /slow answers after 1 s; /fail-later answers 503 from its 4th request on."""

    hits = 0

    def do_GET(self) -> None:
        type(self).hits += 1
        if self.path == "/slow":
            time.sleep(1.0)
        status = {"/fail": 503, "/auth": 401, "/forbidden": 403, "/login-first": 302}.get(self.path, 200)
        if self.path == "/fail-later" and type(self).hits > 3:
            status = 503
        self.send_response(status)
        if status == 302:
            self.send_header("Location", "/login")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with serving(Misbehaving) as base:
        yield base


@pytest.mark.parametrize(("path", "args", "said"), [
    ("/ok", ["--max-requests", "40"], "error: no limit found within 40 requests: the request cap reached (raise --max-requests)"),
    ("/fail", [], "/fail: every request answered 503 (1 of 1): nothing to judge (a limiter answers 2xx or 429)"),
    ("/auth", ["--key", "header:X-API-Key=team-"], "/auth: every request answered 401 (1 of 1): nothing to judge; it needs "
                                                   "a key the judge was not given (sent 'team-"),
    ("/forbidden", [], "/forbidden: every request answered 403 (1 of 1): nothing to judge; it needs a key"),
    ("/login-first", [], "/login-first: every request answered 302 to /login (1 of 1): nothing to judge "
                         "(a limiter answers 2xx or 429)"),
    ("/fail-later", [], "/fail-later: request 4 (key) answered 503 (the 3 before it: 200 x3): nothing to judge"),
    ("/slow", ["--timeout", "0.2"], "timed out after 0.2 s (request 1): no whole answer, status line, headers and body, "
                                    "within --timeout"),
    ("/ok", ["--key", "cookie:sid"], "--key 'cookie:sid': expected ip or header:NAME[=PREFIX]"),
    ("/ok", ["--max-rate", "0"], "--max-rate 0: must be at least 1"),
    ("/ok", ["--max-time", "0.5"], "--max-time 0.5: must be at least 1"),
])
def test_each_misbehaviour_is_one_line_and_exit_2(server, tmp_path, capsys, path, args, said):
    Misbehaving.hits = 0
    code = main(["judge", f"{server}{path}", "--out", str(tmp_path / "out"), *args])
    err = capsys.readouterr().err.strip()
    assert code == 2 and said in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "out").exists()
    assert Misbehaving.hits <= {"/ok": 40, "/fail-later": 4}.get(path, 1)


def test_the_partial_measurement_is_kept_in_json(server, tmp_path, capsys):
    """Exit 2 for an endpoint that stops answering as a limiter does; what it answered till then kept."""
    Misbehaving.hits = 0
    code = main(["judge", f"{server}/fail-later", "--out", str(tmp_path / "out"), "--json", str(tmp_path / "j.json")])
    doc = json.loads((tmp_path / "j.json").read_text())
    assert code == 2 and not (tmp_path / "out").exists()
    assert doc["error"] == capsys.readouterr().err.strip().removeprefix("error: ")
    assert (doc["requests"], doc["roles"], doc["statuses"], doc["verdict"]) == (4, {"key": 4}, {"200": 3, "503": 1}, None)
    assert doc["header_truth"]["said"] == {"none": 4} and doc["header_truth"]["malformed"] == []


def test_a_session_ends_within_its_time_bound_and_says_which(server, tmp_path, capsys):
    """An endpoint that admits everything, a session of 1 s at 5 requests a second: the time bound,
    not the request cap, ends it; exit 2, named, the requests it sent kept in --json."""
    code = main(["judge", f"{server}/ok", "--max-time", "1", "--max-rate", "5", "--json", str(tmp_path / "j.json"),
                 "--out", str(tmp_path / "out")])
    doc = json.loads((tmp_path / "j.json").read_text())
    err = capsys.readouterr().err.strip()
    assert code == 2 and err == f"error: {doc['error']}"
    assert doc["error"] == f"no limit found within {doc['requests']} requests: the time bound (1 s) reached (raise --max-time)"
    assert 1 <= doc["requests"] <= 10 and doc["statuses"] == {"200": doc["requests"]}


@contextmanager
def _raw_server(answer: Callable[[socket.socket, threading.Event], None]) -> Iterator[str]:
    """A socket server in a thread: each connection's request read, then ``answer`` writes to it until
    the client goes away (a send fails) or the server stops."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn, suppress(OSError):  # the judge hung up: what it was sent is enough
                conn.recv(65536)
                answer(conn, stop)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/api"
    finally:
        stop.set()
        thread.join()
        listener.close()


def _trickle(conn: socket.socket, stop: threading.Event) -> None:
    """A status line a byte every 50 ms, then header lines that never end: every read is answered."""
    head = b"HTTP/1.1 200 OK\r\n"
    i = 0
    while not stop.is_set() and i < 600:  # 30 s at most: a judge that never cut it fails, not hangs
        conn.sendall(head[i:i + 1] if i < len(head) else b"x")
        i += 1
        time.sleep(0.05)


def _endless(pause_s: float) -> Callable[[socket.socket, threading.Event], None]:
    """A 200 whose chunked body does not end: 16 KiB chunks, ``pause_s`` apart (4,096 chunks or 30 s
    at most: a judge that never cut it fails, not hangs)."""
    def answer(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"4000\r\n" + b"a" * 0x4000 + b"\r\n"
        until = time.monotonic() + 30
        for _ in range(4096):
            if stop.is_set() or time.monotonic() > until:
                break
            conn.sendall(chunk)
            time.sleep(pause_s)
    return answer


@pytest.mark.parametrize(("answer", "said"), [
    (_trickle, "timed out after 2 s (request 1): no whole answer, status line, headers and body, within --timeout"),
    (_endless(0.0), "the body of request 1 went past 1,048,576 bytes (an answer that does not end): judge an endpoint "
                    "whose answers end"),
    (_endless(0.2), "timed out after 2 s (request 1)"),  # 80 KiB a second: under the cap, past the bound
])
def test_an_answer_that_never_ends_is_cut_at_its_bound(tmp_path, capsys, answer, said):
    with _raw_server(answer) as url:
        code = main(["judge", url, "--timeout", "2", "--json", str(tmp_path / "j.json"), "--out", str(tmp_path / "out")])
        err = capsys.readouterr().err.strip()
        assert code == 2 and said in err and len(err.splitlines()) == 1, err
        doc = json.loads((tmp_path / "j.json").read_text())
        assert (doc["error"], doc["requests"], doc["verdict"]) == (err.removeprefix("error: "), 0, None)


def test_an_unreachable_url_is_one_line_with_its_json(tmp_path, capsys):
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.close()  # nothing listens there now
    code = main(["judge", f"http://127.0.0.1:{port}/api", "--json", "-", "--out", str(tmp_path / "out")])
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "ConnectError" in err and "(request 1)" in err, err
    assert json.loads(captured.out)["requests"] == 0


def test_an_address_keyed_judge_needs_a_loopback_endpoint(capsys):
    assert main(["judge", "http://192.0.2.1/api", "--key", "ip"]) == 2
    assert "--key ip needs an endpoint on 127.0.0.0/8" in capsys.readouterr().err


def test_validate_url_says_the_same_and_keeps_what_it_measured(server, tmp_path, capsys):
    """``validate --url`` runs the judge's session: a redirect is said as one, exit 2, and its
    --json keeps the checks made so far with the session's partial measurement."""
    claim = tmp_path / "claim.yaml"
    claim.write_text("name: claim\nroutes: [{name: GET /api/items}]\n"
                     "limits: [{name: api, key: ip, algorithm: fixed_window, limit: 5, window_s: 1}]\n")
    Misbehaving.hits = 0
    code = main(["validate", str(claim), "--url", f"{server}/login-first", "--live", "--json", str(tmp_path / "v.json")])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    doc = json.loads((tmp_path / "v.json").read_text())
    assert code == 2 and err == f"error: {server}/login-first: every request answered 302 to /login (1 of 1): nothing to " \
                                "judge (a limiter answers 2xx or 429)"
    assert doc["measured"]["error"] == err.removeprefix("error: ")
    assert (doc["measured"]["roles"], doc["measured"]["statuses"]) == ({"reach": 1}, {"302": 1})
    assert doc["checks"] and all(c["kind"] != "live" for c in doc["checks"])  # the simulated checks made before it
