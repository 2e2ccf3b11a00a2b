"""Which address each request of a plan leaves from, and how many connections each address warms
(pure: no sockets; the live tests in tests/harness/live/test_client_addresses.py send from them)."""

from __future__ import annotations

from scenarios.addresses import ADDRESS_BLOCKS, MAX_ADDRESSES, PROBE_ADDRESS, SHARED, WARM_UP_ADDRESS, addresses, client_address
from scenarios.live_plan import LivePlan
from scenarios.raw_replay import connections_needed, wires


def _plan(scenario: str, params: dict, host: str = "http://127.0.0.1:8000") -> LivePlan:
    return LivePlan(scenario, 5, 1, 1, 0.0, [host], "/tmp/unused", params=params)


def test_each_client_has_its_own_address_in_order_of_its_first_request():
    assert addresses(["b", "a", "b", "c"], None) == ["127.10.0.1", "127.10.0.2", "127.10.0.1", "127.10.0.3"]
    assert addresses(["b", "a"], SHARED) == [SHARED, SHARED]
    own = {client_address(n) for n in range(MAX_ADDRESSES)}
    assert len(own) == MAX_ADDRESSES and not own & {SHARED, WARM_UP_ADDRESS, PROBE_ADDRESS}
    assert client_address(MAX_ADDRESSES + 7) == client_address(7)  # past the cap, addresses repeat
    assert client_address(249) == "127.10.0.250" and client_address(250) == "127.10.1.1"


def test_each_block_of_addresses_is_its_own_and_a_valid_loopback_address():
    """Runs against a url endpoint (it keeps its limiter's state between runs) take a block each."""
    assert client_address(0, 1) == "127.10.4.1" and client_address(999, 1) == "127.10.7.250"
    assert client_address(0, 62) == "127.10.248.1" and client_address(0, 63) == "127.11.2.1"
    assert client_address(499, 62) == "127.10.249.250" and client_address(500, 62) == "127.11.0.1"  # 62,500 a second octet
    last = client_address(MAX_ADDRESSES - 1, ADDRESS_BLOCKS - 1)
    assert last.startswith("127.254.") and all(0 <= int(o) <= 255 for o in last.split("."))
    assert client_address(5, ADDRESS_BLOCKS + 3) == client_address(5, 3)
    blocks = [{client_address(n, b) for n in range(MAX_ADDRESSES)} for b in (0, 1, 62, 63)]
    assert sum(map(len, blocks)) == len(set().union(*blocks)) == 4 * MAX_ADDRESSES
    assert addresses(["b", "a", "b"], None, 2) == ["127.10.8.1", "127.10.8.2", "127.10.8.1"]


def test_a_plan_says_where_each_request_leaves_from():
    steady = _plan("steady", {"clients": 7, "duration_s": 2})
    own = dict(zip(steady.arrivals().client_id, steady.addresses()))
    assert len(set(own.values())) == 7 == len(own)
    # behind one proxy on purpose; one attacker under two client ids; a host off loopback
    assert set(_plan("key_evasion", {"duration_s": 1}).addresses()) == {SHARED}
    assert len(set(_plan("adversarial_drip", {"duration_s": 2}).addresses())) == 1
    assert set(_plan("steady", {"clients": 3, "duration_s": 1}, "http://10.0.0.7:80").addresses()) == {None}


def test_warm_connections_per_address_cover_its_largest_group_and_its_rate():
    reqs = wires([("GET", "/api/items", {})] * 6, ["http://127.0.0.1:8000"] * 6,
                 ["127.10.0.1", "127.10.0.1", "127.10.0.2", "127.10.0.1", "127.10.0.2", "127.10.0.2"])
    a, b = reqs[0].origin, reqs[2].origin
    assert reqs[1].origin is a and reqs[4].origin is b  # one origin object per (host, address)
    need = connections_needed(reqs, [range(0, 3), range(3, 6)], span_s=1.0, latency_s=0.5, spare=8)
    # each: 2 in its largest group + 3 per s x 0.5 s in flight (1) + 8 spare shared by 2 addresses (4)
    assert need == {a: 2 + 1 + 4, b: 2 + 1 + 4}
    many = wires([("GET", "/", {})] * 20, ["http://127.0.0.1:8000"] * 20, [f"127.10.0.{n + 1}" for n in range(20)])
    assert set(connections_needed(many, [range(20)], 1.0, 0.02, 8).values()) == {1}  # one each: no spare left
