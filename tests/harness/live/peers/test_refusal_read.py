"""The refusal probe tries once more when its first try read no refusal and its answers came
late: a busy moment of the machine (each request slower than the limiter refills) is read again,
a limiter that holds requests is held on both tries."""

from __future__ import annotations

import time
from http.server import BaseHTTPRequestHandler
from typing import ClassVar

from harness.live.peers.response import HELD_MS, PROBE_PREFIX, refusal_read
from tests.http_stub import serving

SLOW_S = 1.2 * HELD_MS / 1000
"""How long the stubs hold an answer: past HELD_MS whatever the machine does."""


class Stub(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: ClassVar[list[str]]

    def answer(self, status: int, headers: dict[str, str]) -> None:
        self.send_response(status)
        for name, value in {**headers, "Content-Length": "0"}.items():
            self.send_header(name, value)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        """Quiet: the test reads what the probe recorded."""


class BusyThenRefusing(Stub):
    """Slow answers to the first try (a busy moment), then 2 admitted and a refusal to the second."""

    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        rid = self.headers["x-request-id"]
        self.seen.append(rid)
        if not rid.startswith(f"{PROBE_PREFIX}again-"):
            time.sleep(SLOW_S)
            return self.answer(200, {})
        again = sum(s.startswith(f"{PROBE_PREFIX}again-") for s in self.seen)
        if again <= 2:
            return self.answer(200, {})
        self.answer(429, {"Content-Type": "application/problem+json", "Retry-After": "60", "Cache-Control": "no-store"})


class Holding(Stub):
    """A queueing limiter: every answer held, none refused."""

    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.seen.append(self.headers["x-request-id"])
        time.sleep(SLOW_S)
        self.answer(200, {})


def test_a_first_try_that_came_late_is_read_again_and_the_second_reading_is_kept():
    with serving(BusyThenRefusing) as url:
        found = refusal_read(url, 4, refill_s=0.01)
    assert (found.tries, found.status, found.statuses) == (2, 429, [200, 200, 429])
    assert BusyThenRefusing.seen == [f"{PROBE_PREFIX}{i}" for i in range(4)] + [
        f"{PROBE_PREFIX}again-{i}" for i in range(3)]
    assert found.findings() == []


def test_a_limiter_that_holds_both_tries_is_reported_as_holding():
    with serving(Holding) as url:
        found = refusal_read(url, 3, refill_s=0.01)
    assert (found.tries, found.status, len(Holding.seen)) == (2, None, 6)
    [finding] = found.findings()
    assert finding.startswith("no refusal within 3 sequential requests at one key: it held them instead")
    assert found.report()["tries"] == 2 and "tag" not in found.report()
