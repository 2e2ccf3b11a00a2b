"""Key policy: precedence, trusted proxies, IPv6 prefixes, and garbage that must not crash."""

from __future__ import annotations

import pytest

from targets.config import KeyConfig
from targets.keys import KeyPolicy


def scope(peer: str = "10.0.0.9", **headers: str | bytes) -> dict:
    raw = [(k.replace("_", "-").encode(), v if isinstance(v, bytes) else v.encode()) for k, v in headers.items()]
    return {"client": (peer, 5000), "headers": raw}


def test_api_key_beats_user_beats_ip():
    keys = KeyPolicy(KeyConfig())
    assert keys.identify(scope(x_api_key="k1", x_user="bob")).client == "api_key:k1"
    assert keys.identify(scope(x_user="bob")).client == "user:bob"
    assert keys.identify(scope()).client == "ip:10.0.0.9"
    who = keys.identify(scope(x_user="bob", x_tenant="acme", x_tier="vip"))
    assert (who.key("user"), who.key("tenant"), who.tier, who.key("global")) == ("user:bob", "tenant:acme", "vip", "*")
    assert who.key("api_key") is None


def test_one_trusted_proxy_reads_the_rightmost_entry():
    keys = KeyPolicy(KeyConfig(trusted_proxies=1))
    honest = keys.identify(scope("127.0.0.1", x_forwarded_for="203.0.113.7"))
    spoofed = keys.identify(scope("127.0.0.1", x_forwarded_for="1.2.3.4, 203.0.113.7"))
    assert honest.ip == spoofed.ip == "ip:203.0.113.7"
    two = KeyPolicy(KeyConfig(trusted_proxies=2))
    assert two.identify(scope(x_forwarded_for="1.2.3.4, 203.0.113.7, 10.1.1.1")).ip == "ip:203.0.113.7"
    assert two.identify(scope(x_forwarded_for="203.0.113.7")).ip == "ip:203.0.113.7"  # shorter chain: leftmost
    # repeated headers are one list
    repeated = {"client": ("127.0.0.1", 1), "headers": [(b"x-forwarded-for", b"1.1.1.1"), (b"x-forwarded-for", b"2.2.2.2")]}
    assert keys.identify(repeated).ip == "ip:2.2.2.2"


def twice(name: bytes, *tags: tuple[bytes, bytes]) -> dict:
    return {"client": ("10.0.0.9", 1), "headers": [(name, b"first"), *tags, (name, b"second")]}


@pytest.mark.parametrize("name", [b"x-api-key", b"x-user", b"x-tenant", b"x-tier"])
def test_a_repeated_identity_header_is_named_never_joined(name):
    refused = KeyPolicy(KeyConfig()).identify(twice(name))
    assert refused.repeated == name.decode()
    first = KeyPolicy(KeyConfig(repeated_key="first")).identify(twice(name))
    assert first.repeated is None
    field = {b"x-api-key": "api_key", b"x-user": "user", b"x-tenant": "tenant", b"x-tier": "tier"}[name]
    assert getattr(refused, field) == getattr(first, field) == "first"


def test_repeated_bench_tags_keep_their_first_value_and_refuse_nothing():
    who = KeyPolicy(KeyConfig()).identify(twice(b"x-request-id", (b"x-client-class", b"legit"),
                                                 (b"x-client-class", b"abusive")))
    assert (who.repeated, who.request_id, who.client_class) == (None, "first", "legit")


def test_without_trusted_proxies_forwarded_for_is_ignored():
    assert KeyPolicy(KeyConfig()).identify(scope(x_forwarded_for="1.2.3.4")).ip == "ip:10.0.0.9"


def test_ipv6_is_aggregated_by_prefix():
    keys = KeyPolicy(KeyConfig(trusted_proxies=1))
    a = keys.identify(scope(x_forwarded_for="2001:db8:1:2::1")).ip
    b = keys.identify(scope(x_forwarded_for="2001:db8:1:2:ffff:ffff:ffff:ffff")).ip
    c = keys.identify(scope(x_forwarded_for="2001:db8:1:3::1")).ip
    assert a == b == "ip:2001:db8:1:2::/64" != c
    wide = KeyPolicy(KeyConfig(trusted_proxies=1, ipv6_prefix=48))
    assert wide.identify(scope(x_forwarded_for="2001:db8:1:3::1")).ip == "ip:2001:db8:1::/48"
    assert keys.identify(scope(x_forwarded_for="::ffff:198.51.100.4")).ip == "ip:198.51.100.4"
    assert keys.identify(scope("2001:db8::77")).ip == "ip:2001:db8::/64"  # IPv6 peers too


@pytest.mark.parametrize("junk", [
    "", ",,,", "not-an-ip", "999.1.1.1", "2001:db8:::1", "fe80::1%eth0%", "1.2.3.4; drop table",
    "1.2.3.4" * 2000, "\u00e9\u00e9".encode("latin-1"), b"\xff\xfe\x00", "[2001:db8::1]:80",
])
def test_garbage_forwarded_for_falls_back_to_the_peer(junk):
    keys = KeyPolicy(KeyConfig(trusted_proxies=1))
    assert keys.identify(scope("10.0.0.9", x_forwarded_for=junk)).ip == "ip:10.0.0.9"


@pytest.mark.parametrize("junk", [b"", b"a" * 8192, b"has space", b"\xff\xfe", b"tab\tinside"])
def test_garbage_identity_headers_are_ignored(junk):
    who = KeyPolicy(KeyConfig()).identify(scope(x_api_key=junk, x_user=junk, x_tenant=junk, x_tier=junk))
    assert who.client == "ip:10.0.0.9" and who.tenant is None and who.tier is None


def test_no_peer_address():
    assert KeyPolicy(KeyConfig()).identify({"client": None, "headers": []}).ip == "ip:unknown"
