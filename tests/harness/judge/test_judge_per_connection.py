"""``judge`` finds a limiter that counts per connection (Envoy's
``local_rate_limit_per_downstream_connection``): a fresh connection from the same address with the
same headers is admitted at once where a fresh header value is not. The limiter is an in-process
sliding log keyed by the client's (address, port), its limit drawn at random, and the real Envoy
with and without the option; what is asserted is what they decided, never a time."""

from __future__ import annotations

import random
import threading
from collections import defaultdict
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import ClassVar

import pytest

from harness.cli.judge import keyed_by
from harness.judge import keys
from harness.judge.endpoint import HttpEndpoint, JudgeError, KeySpec
from harness.live.peers import live_peer
from harness.live.peers.standalone import peer_before_none
from targets.algorithms import Policy
from tests.harness.live.peers.test_envoy import needs_envoy
from tests.http_stub import serving

ISTIO = Path(__file__).resolve().parents[3] / "campaigns" / "configs" / "istio-local-ratelimit.yaml"

L = random.Random().randint(2, 9)
"""The stub's limit: no constant can pass the test."""


class PerConnection(BaseHTTPRequestHandler):
    """A sliding log of L in any 60 s per connection (nothing comes back while the test runs)."""

    protocol_version = "HTTP/1.1"
    admitted: ClassVar[dict[tuple[str, int], int]] = defaultdict(int)
    lock = threading.Lock()

    def do_GET(self) -> None:
        with self.lock:
            ok = self.admitted[self.client_address] < L
            self.admitted[self.client_address] += ok
        self.send_response(200 if ok else 429)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        """Quiet."""


@pytest.fixture(scope="module")
def url():
    with serving(PerConnection) as base:
        yield f"{base}/api/items"


def test_a_counter_per_connection_is_found_and_said(url):
    endpoint = HttpEndpoint(url, KeySpec("X-API-Key"), max_requests=200, max_rate=500.0)
    try:
        found = keys.discover(endpoint)
    finally:
        endpoint.close()
    # refused after its L on one connection; a fresh connection (and a fresh address: a new
    # connection too) admitted at once, every fresh header on the refused connection refused
    assert (found.refused, found.admitted, found.rounds) == (True, L, keys.ROUNDS)
    assert found.keys == (keys.CONNECTION, keys.IP) and found.per_connection, found.sentence()
    assert "a counter per connection: a client that reconnects" in found.sentence()
    fresh = [s for s in endpoint.before if s.answer.key.startswith("identity, connection fresh")]
    assert len(fresh) == keys.ROUNDS and all(s.answer.allowed for s in fresh)
    # each fresh connection was a new one, and the identity's own connection stayed as it was
    assert len(PerConnection.admitted) == 1 + keys.ROUNDS * 2  # the identity's, a connection and an address a round
    assert keyed_by(found, loopback=True) == KeySpec()  # judged with a connection (an address) per client
    with pytest.raises(JudgeError, match="cannot give each client a connection of its own"):
        keyed_by(found, loopback=False)


def _found_in_envoy(tmp_path: Path, per_connection: bool) -> keys.Found:
    """Istio's documented filter (4 tokens, 4 per 60 s; its Deployment left out) in a real Envoy,
    with ``local_rate_limit_per_downstream_connection`` set or not, and the key searched."""
    text = ISTIO.read_text().split("\n---")[0]
    if per_connection:
        text = text.replace("              stat_prefix: http_local_rate_limiter\n", "              stat_prefix: "
                            "http_local_rate_limiter\n              local_rate_limit_per_downstream_connection: true\n")
    live = live_peer("envoy").from_config(text)
    with peer_before_none("envoy", Policy(4, 60.0), tmp_path, live=live) as (url, _):
        endpoint = HttpEndpoint(f"{url}/api/items", KeySpec("X-API-Key"), max_requests=200, max_rate=100.0)
        try:
            return keys.discover(endpoint)
        finally:
            endpoint.close()


@needs_envoy
@pytest.mark.process
def test_envoys_bucket_per_connection_is_found_and_its_bucket_for_everyone_is_not(tmp_path):
    per_connection = _found_in_envoy(tmp_path / "per-connection", True)
    assert (per_connection.admitted, per_connection.rounds, per_connection.keys) == (4, keys.ROUNDS, (keys.CONNECTION, keys.IP))
    shared = _found_in_envoy(tmp_path / "shared", False)
    assert (shared.admitted, shared.rounds, shared.keys) == (4, keys.ROUNDS, ())
    assert "one counter for everyone" in shared.sentence()
