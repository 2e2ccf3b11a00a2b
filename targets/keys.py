"""Who is asking: the identities a request is limited by, read from ASGI headers.

- client key: API key header > authenticated user header > client IP;
- client IP: the peer address, or with N trusted proxies the N-th ``X-Forwarded-For`` entry
  from the right (each trusted proxy appended the address it saw; anything further left was
  written by the client and may be spoofed);
- one key per request: an identity header sent twice is refused (``KeyConfig.repeated_key``:
  ``refuse``, 400) or counted by its first value (``first``), never by its values joined (a
  client would make a fresh key per request); several X-Forwarded-For lines are one list in
  order (RFC 9110 5.3: a recipient may combine them so; a proxy may add its own line rather
  than append to the client's, so the entries on the right are still the trusted proxies');
- IPv6 addresses are aggregated by prefix (/64 by default: one customer usually owns a whole
  /64, so per-address keys would be free to rotate); IPv4 by ``ipv4_prefix`` (/32 by default).

Malformed or oversized values never raise: an unusable forwarded address falls back to the
peer address, an unusable API key, user, tenant or tier header is ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from .config import KeyConfig
from .ip_keys import client_key, forwarded_ip, ip_key_function

_TOKEN = re.compile(rb"[\x21-\x7e]{1,128}")
"""API keys, users, tenants, tiers, accounts: 1-128 visible ASCII characters."""
_XFF = b"x-forwarded-for"
_REQUEST_ID, _CLIENT_ID, _CLIENT_CLASS = b"x-request-id", b"x-client-id", b"x-client-class"
CLIENT_CLASSES = frozenset((b"legit", b"abusive"))
GLOBAL_KEY = "*"


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
    repeated: str | None = None
    """An identity header the request sent more than once, under the ``refuse`` policy: it is
    answered 400 naming it, never counted (joined, its values would be a fresh key each time)."""

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
        identity = frozenset((self._api, self._user, self._tenant, self._tier))
        self._refused = identity if config.repeated_key == "refuse" else frozenset()
        """The identity headers whose repetition refuses the request (``KeyConfig.repeated_key``)."""
        self._ip_key = lru_cache(maxsize=8192)(ip_key_function(config.ipv4_prefix, config.ipv6_prefix))

    def identify(self, scope: dict) -> Identity:
        """The request's identities. A repeated identity header keeps its first value (and is
        named in ``repeated`` under the ``refuse`` policy); repeated X-Forwarded-For lines are
        one list, in order (``client_ip``)."""
        found: dict[bytes, bytes] = {}
        wanted, repeated = self._wanted, None
        for name, value in scope["headers"]:
            if name not in wanted:
                continue
            if name not in found:
                found[name] = value
            elif name == _XFF:
                found[name] += b"," + value
            elif repeated is None and name in self._refused:
                repeated = name.decode("ascii")
        peer = scope.get("client")
        ip = self.client_ip(peer[0] if peer else None, found.get(_XFF))
        api_key, user = token(found.get(self._api)), token(found.get(self._user))
        client = client_key(api_key, user, ip)
        klass = found.get(_CLIENT_CLASS)
        return Identity(client, ip, user, api_key, token(found.get(self._tenant)), token(found.get(self._tier)),
                        token(found.get(_REQUEST_ID)), token(found.get(_CLIENT_ID)),
                        klass.decode() if klass in CLIENT_CLASSES else None, repeated=repeated)

    def client_ip(self, peer: str | None, forwarded: bytes | None) -> str:
        """The client IP key (``ip:<address or network>``)."""
        return forwarded_ip(peer, forwarded, self.trusted, self._ip_key)
