"""`judge` on endpoints it cannot judge: one line naming why, exit 2, nothing written, nothing
sent past the caps (a real HTTP server on loopback playing each misbehaviour)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from harness.cli.main import main


class Misbehaving(BaseHTTPRequestHandler):
    """/ok admits everything, /fail answers 503, /auth 401, /slow answers after 1 s."""

    hits = 0

    def do_GET(self) -> None:
        type(self).hits += 1
        if self.path == "/slow":
            time.sleep(1.0)
        status = {"/fail": 503, "/auth": 401}.get(self.path, 200)
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Misbehaving)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()


@pytest.mark.parametrize(("path", "args", "said"), [
    ("/ok", ["--max-requests", "40"], "error: no limit found within 40 requests (--max-requests)"),
    ("/fail", [], "answers 503 (request 1, role learn): judge a limiter that answers 2xx or 429"),
    ("/auth", ["--key", "header:X-API-Key=team-"], "answers 401 to key 'team-"),
    ("/slow", ["--timeout", "0.2"], "timed out after 0.2 s (request 1)"),
    ("/ok", ["--key", "cookie:sid"], "--key 'cookie:sid': expected ip or header:NAME[=PREFIX]"),
    ("/ok", ["--max-rate", "0"], "--max-rate 0: must be at least 1"),
])
def test_each_misbehaviour_is_one_line_and_exit_2(server, tmp_path, capsys, path, args, said):
    Misbehaving.hits = 0
    code = main(["judge", f"{server}{path}", "--out", str(tmp_path / "out"), *args])
    err = capsys.readouterr().err.strip()
    assert code == 2 and said in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "out").exists()
    assert Misbehaving.hits <= (40 if path == "/ok" else 1)


def test_an_address_keyed_judge_needs_a_loopback_endpoint(capsys):
    assert main(["judge", "http://192.0.2.1/api"]) == 2
    assert "--key ip needs an endpoint on 127.0.0.0/8" in capsys.readouterr().err
