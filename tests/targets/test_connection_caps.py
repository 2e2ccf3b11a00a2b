"""Connection floods: the per-address and total caps (NGINX's limit_conn), counted exactly over a
sequence of opens and closes, answered before anything is parsed, and a listener that accepts
every pending connection on one wake (uvloop's own server took one per loop iteration, so a
flood's listen queue was drained at a few connections a second)."""

from __future__ import annotations

import asyncio
import socket

from hypothesis import given
from hypothesis import strategies as st

from benchmarks.raw_http import connect, read_answers, request
from targets.accept import DrainingListener
from targets.connection_caps import REFUSAL, ConnectionCaps
from tests.poll import until


def test_caps_count_per_address_and_in_all():
    caps = ConnectionCaps(total=3, per_address=2)
    assert [caps.admit("a"), caps.admit("a"), caps.admit("a")] == [True, True, False]
    assert caps.admit("b") and not caps.admit("c")  # 3 held: the total is reached
    caps.release("a")
    assert caps.admit("c") and not caps.admit("a")
    assert (caps.held, dict(caps.open), caps.refused) == (3, {"a": 1, "b": 1, "c": 1}, 3)


@given(st.lists(st.tuples(st.booleans(), st.sampled_from("abc")), max_size=60))
def test_caps_never_hold_more_than_their_bounds(steps):
    caps, held = ConnectionCaps(total=4, per_address=2), []
    for opening, address in steps:
        if opening:
            if caps.admit(address):
                held.append(address)
        elif address in held:
            held.remove(address)
            caps.release(address)
        assert caps.held == len(held) <= 4
        assert all(caps.open[a] == held.count(a) <= 2 for a in "abc")


def test_one_wake_accepts_every_pending_connection():
    async def run() -> int:
        made: list[asyncio.Protocol] = []
        listener = socket.create_server(("127.0.0.1", 0))
        port = listener.getsockname()[1]
        clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(20)]  # queued before any accept
        server = DrainingListener(listener, lambda: made.append(asyncio.Protocol()) or made[-1], 64, ConnectionCaps())
        for _ in range(3):  # the wake, then the hand-offs' tasks
            await asyncio.sleep(0)
        server.close()
        await server.wait_closed()
        for c in clients:
            c.close()
        listener.close()
        return len(made)

    assert asyncio.run(run()) == 20


def test_a_connection_past_the_per_address_cap_gets_the_503_and_another_address_is_served(module_start):
    target = module_start("--algorithm", "fixed_window", "--limit", "1000", "--service-ms", "0",
                          "--max-conns-per-address", "2")
    flooder = "127.0.0.3"  # an address of its own: the harness's readiness checks come from 127.0.0.1
    held = [connect(target.port, timeout_s=5, source=flooder) for _ in range(2)]
    try:
        for sock in held:  # both admitted, and kept
            sock.sendall(request(x_api_key="k"))
            assert read_answers(sock, 1).statuses == [200]
        with connect(target.port, timeout_s=5, source=flooder) as third:
            third.sendall(request(x_api_key="k"))
            got = read_answers(third, 1)
            assert got.statuses == [503] and got.closed is False
            assert REFUSAL.endswith(got.bodies[0]) and b"retry-after: 1" in got.heads[0]
        with connect(target.port, timeout_s=5, source="127.0.0.2") as other:
            other.sendall(request(x_api_key="k"))
            assert read_answers(other, 1).statuses == [200]
    finally:
        held.pop().close()
    def admitted_again() -> bool:
        with connect(target.port, timeout_s=5, source=flooder) as again:
            again.sendall(request(x_api_key="k"))
            return read_answers(again, 1).statuses == [200]

    try:  # a place freed, once the target has seen the close (in its own time: a busy machine waits longer)
        assert until(admitted_again, timeout_s=30), "the closed connection's place was never freed"
    finally:
        held[0].close()


def test_caps_out_of_bounds_are_refused_in_one_line(start):
    from targets.__main__ import main
    assert main(["--port", "1", "--max-conns-per-address", "0"]) == 2


def test_head_and_unrouted_requests_are_counted_on_the_key(module_start):
    """NGINX's ``location /`` counts every request: a flood of HEADs or 404s used to cost the target
    without ever touching a key (limit 3 per day: the fourth request of any kind is refused).
    A HEAD of a GET route counts as that route."""
    target = module_start("--algorithm", "fixed_window", "--limit", "3", "--window", "86400", "--service-ms", "0")
    with connect(target.port, timeout_s=5, source="127.0.0.4") as sock:  # a HEAD's answer has no body to split on
        sock.sendall(request("HEAD", x_api_key="h"))
        assert b"x-ratelimit-remaining: 2\r\n" in sock.recv(65536)  # decided (FastAPI then answers 405)
    with connect(target.port, timeout_s=5, source="127.0.0.4") as sock:
        sock.sendall(request(path="/nowhere", x_api_key="h") + request("DELETE", x_api_key="h")
                     + request(path="/nowhere", x_api_key="h") + request(x_api_key="h"))
        assert read_answers(sock, 4).statuses == [404, 405, 429, 429]
    with connect(target.port, timeout_s=5, source="127.0.0.4") as sock:  # never limited
        sock.sendall(request(path="/healthz", x_api_key="h"))
        assert read_answers(sock, 1).statuses == [200]
