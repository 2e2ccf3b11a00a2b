"""Who is asking: the identities a request is limited by, read from ASGI headers.

- client key: API key header > authenticated user header > client IP;
- client IP: the peer address, or with N trusted proxies the N-th ``X-Forwarded-For`` entry
  from the right (each trusted proxy appended the address it saw; anything further left was
  written by the client and may be spoofed);
- IPv6 addresses are aggregated by prefix (/64 by default: one customer usually owns a whole
  /64, so per-address keys would be free to rotate); IPv4 by ``ipv4_prefix`` (/32 by default).

Malformed or oversized values never raise: an unusable forwarded address falls back to the
peer address, an unusable API key, user, tenant or tier header is ignored.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from .config import KeyConfig

MAX_FORWARDED_BYTES = 1024
"""A longer X-Forwarded-For is not parsed at all (peer address)."""
_TOKEN = re.compile(rb"[\x21-\x7e]{1,128}")
"""API keys, users, tenants, tiers, accounts: 1-128 visible ASCII characters."""
_XFF = b"x-forwarded-for"
_REQUEST_ID, _CLIENT_ID, _CLIENT_CLASS = b"x-request-id", b"x-client-id", b"x-client-class"
CLIENT_CLASSES = frozenset((b"legit", b"abusive"))
GLOBAL_KEY = "*"
_V4_MAPPED = bytes(10) + b"\xff\xff"


@dataclass(slots=True)
class Identity:
    """The request's identities by scope name; a scope that is absent has no key (its limit
    does not apply to this request)."""

    client: str
    ip: str
    user: str | None
    api_key: str | None
    tenant: str | None
    tier: str | None
    request_id: str | None = None
    """Benchmark tags the load generator sets (X-Request-ID, X-Client-ID, X-Client-Class);
    they go to the decision log, never into a key."""
    client_id: str | None = None
    client_class: str | None = None
    account: str | None = None

    def key(self, scope: str) -> str | None:
        if scope == "global":
            return GLOBAL_KEY
        value = getattr(self, scope)
        if value is None or scope in ("client", "ip"):
            return value
        return f"{scope}:{value}"


def token(raw: bytes | None) -> str | None:
    """A header value usable as a key part, or None."""
    if raw is None or _TOKEN.fullmatch(raw) is None:
        return None
    return raw.decode("ascii")


class KeyPolicy:
    def __init__(self, config: KeyConfig) -> None:
        self.trusted = config.trusted_proxies
        self._api = config.api_key_header.encode()
        self._user = config.user_header.encode()
        self._tenant = config.tenant_header.encode()
        self._tier = config.tier_header.encode()
        self._wanted = frozenset((self._api, self._user, self._tenant, self._tier, _XFF,
                                  _REQUEST_ID, _CLIENT_ID, _CLIENT_CLASS))
        self._ip_key = lru_cache(maxsize=8192)(_ip_key_function(config.ipv4_prefix, config.ipv6_prefix))

    def identify(self, scope: dict) -> Identity:
        found: dict[bytes, bytes] = {}
        wanted = self._wanted
        for name, value in scope["headers"]:
            if name in wanted:
                # repeated X-Forwarded-For headers form one list (RFC 9110 field combination)
                found[name] = found[name] + b"," + value if name in found else value
        peer = scope.get("client")
        ip = self.client_ip(peer[0] if peer else None, found.get(_XFF))
        api_key, user = token(found.get(self._api)), token(found.get(self._user))
        client = f"api_key:{api_key}" if api_key else f"user:{user}" if user else ip
        klass = found.get(_CLIENT_CLASS)
        return Identity(client, ip, user, api_key, token(found.get(self._tenant)), token(found.get(self._tier)),
                        token(found.get(_REQUEST_ID)), token(found.get(_CLIENT_ID)),
                        klass.decode() if klass in CLIENT_CLASSES else None)

    def client_ip(self, peer: str | None, forwarded: bytes | None) -> str:
        """The client IP key (``ip:<address or network>``)."""
        if self.trusted and forwarded is not None and len(forwarded) <= MAX_FORWARDED_BYTES:
            hops = forwarded.split(b",")
            candidate = hops[-self.trusted] if len(hops) >= self.trusted else hops[0]
            key = self._ip_key(candidate.strip())
            if key is not None:
                return key
        return (self._ip_key(peer.encode()) if peer else None) or "ip:unknown"


def _ip_key_function(v4_prefix: int, v6_prefix: int) -> Callable[[bytes], str | None]:
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
