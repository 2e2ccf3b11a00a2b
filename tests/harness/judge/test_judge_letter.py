"""A limit field that breaks the letter fails where it is judged, in ``judge`` and in ``validate
--url`` alike: a small real endpoint on loopback (a clock-aligned fixed window of 5 per 1 s per
API key) answers its refusals 429 with ``Retry-After: 1.5``, a fraction RFC 9110's delay-seconds
(1*DIGIT) does not allow; both say so quoting the value, and neither counts it as a promise kept."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import ClassVar

import pytest

from harness.cli.main import main
from tests.http_stub import serving

L, W = 5, 1.0
FINDING = "Retry-After '1.5': neither delay-seconds (digits only) nor an HTTP-date"


class FractionalRetryAfter(BaseHTTPRequestHandler):
    """A fixed window of ``L`` per ``W`` s aligned to the clock, by X-API-Key; a refusal says 1.5 s."""

    protocol_version = "HTTP/1.1"
    counts: ClassVar[Counter] = Counter()
    decided: ClassVar[dict[str, list[bool]]] = {}
    """Each key's decisions in the order the stub made them: what the tests read the verdict against."""
    lock = threading.Lock()

    def do_GET(self) -> None:
        window = int(time.time() // W)
        with self.lock:
            self.counts[(self.headers.get("X-API-Key"), window)] += 1
            admitted = self.counts[(self.headers.get("X-API-Key"), window)] <= L
            self.decided.setdefault(self.headers.get("X-API-Key") or "", []).append(admitted)
        self.send_response(200 if admitted else 429)
        if not admitted:
            self.send_header("Retry-After", "1.5")
            self.send_header("Content-Type", "application/problem+json")
            self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with serving(FractionalRetryAfter) as base:
        yield f"{base}/api/items"


def test_judge_fails_a_fractional_retry_after_quoting_it(url, tmp_path, capsys):
    code = main(["judge", url, "--key", "header:X-API-Key", "--max-wait", "5", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 1, out
    malformed = [line for line in out.splitlines() if line.startswith("  malformed: ")]
    assert len(malformed) == 1 and malformed[0].startswith(f"  malformed: {FINDING} (") and "answers)" in malformed[0]
    assert "Retry-After n/a (never checkable)" in out  # "1.5" promises nothing: no retry counted as kept


def test_validate_url_fails_a_fractional_retry_after_quoting_it(url, tmp_path, capsys):
    claim = tmp_path / "claim.yaml"
    claim.write_text(f"name: claim\nroutes: [{{name: GET /api/items}}]\nlimits: [{{name: api, key: api_key, "
                     f"algorithm: fixed_window, limit: {L}, window_s: {W:g}}}]\n")
    code = main(["validate", str(claim), "--url", url, "--live", "--json", "-"])
    rows = {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"] if c["kind"] == "live"}
    assert code == 1
    retry, letter = rows["live: retry after"], rows["live: limit fields"]
    assert (retry["passed"], retry["display"]) == (False, "1.5") and retry["message"].startswith(f"{FINDING} (")
    assert not letter["passed"] and letter["message"].startswith(f"{FINDING} (")
    assert "live: retry after truthful" not in rows  # no wait read, none checked
    # the refusal-status row counts one key's admissions before its first refusal, as the stub
    # decided them: L, or up to 2L where that key's requests met a window edge on a busy machine
    before_first = {d.index(False) for d in FractionalRetryAfter.decided.values() if False in d}
    message = rows["live: refusal status"]["message"]
    n = int(message.removeprefix("refused with 429 after ").split()[0])
    assert message == f"refused with 429 after {n} admitted requests at one key" and n in before_first and L <= n <= 2 * L
