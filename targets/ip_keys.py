"""The pure part of the key policy: which address a request is counted by, from the peer address
and X-Forwarded-For, with IPv4/IPv6 prefix aggregation. Standard library only: the target
(``targets.keys``) uses it per request, and the simulator keys header-carrying requests (the
key-evasion model) through ``targets.keys`` too, so virtual and live runs count alike.
"""

from __future__ import annotations

import socket
from collections.abc import Callable

MAX_FORWARDED_BYTES = 1024
"""A longer X-Forwarded-For is not parsed at all (peer address)."""
_V4_MAPPED = bytes(10) + b"\xff\xff"

IpKey = Callable[[bytes], "str | None"]


def forwarded_ip(peer: str | None, forwarded: bytes | None, trusted: int, ip_key: IpKey) -> str:
    """The client IP key (``ip:<address or network>``): the peer address, or with ``trusted``
    proxies the ``trusted``-th X-Forwarded-For entry from the right (the leftmost if the list is
    shorter). An unusable forwarded entry falls back to the peer address."""
    if trusted and forwarded is not None and len(forwarded) <= MAX_FORWARDED_BYTES:
        hops = forwarded.split(b",")
        candidate = hops[-trusted] if len(hops) >= trusted else hops[0]
        key = ip_key(candidate.strip())
        if key is not None:
            return key
    return (ip_key(peer.encode()) if peer else None) or "ip:unknown"


def client_key(api_key: str | None, user: str | None, ip: str) -> str:
    """The ``client`` scope: API key > authenticated user > client IP."""
    return f"api_key:{api_key}" if api_key else f"user:{user}" if user else ip


def ip_key_function(v4_prefix: int, v6_prefix: int) -> IpKey:
    """``raw address -> "ip:<address>"`` or ``"ip:<network>/<prefix>"``, None if unparseable.
    inet_pton/inet_ntop (C) rather than ``ipaddress``: this runs for every new address, and a
    key-rotation attack makes every address new."""
    v4_mask = ((1 << 32) - 1) ^ ((1 << (32 - v4_prefix)) - 1)
    v6_mask = ((1 << 128) - 1) ^ ((1 << (128 - v6_prefix)) - 1)

    def ip_key(raw: bytes) -> str | None:
        try:
            text = raw.decode("ascii")
            packed = socket.inet_pton(socket.AF_INET6 if ":" in text else socket.AF_INET, text)
        except (OSError, UnicodeDecodeError, ValueError):
            return None
        if len(packed) == 16 and packed[:12] == _V4_MAPPED:
            packed = packed[12:]
        if len(packed) == 4:
            family, bits, prefix, mask = socket.AF_INET, 32, v4_prefix, v4_mask
        else:
            family, bits, prefix, mask = socket.AF_INET6, 128, v6_prefix, v6_mask
        if prefix == bits:
            return f"ip:{socket.inet_ntop(family, packed)}"
        network = (int.from_bytes(packed, "big") & mask).to_bytes(bits // 8, "big")
        return f"ip:{socket.inet_ntop(family, network)}/{prefix}"

    return ip_key
