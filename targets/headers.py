"""What a client is told: the quota headers on every limited response and the 429 itself.

- ``RateLimit-Policy`` / ``RateLimit``: draft-ietf-httpapi-ratelimit-headers-11 structured
  field lists, one member per limit that applied (``"per-client";q=100;w=60`` and
  ``"per-client";r=0;t=12``: quota, window, remaining, seconds until the quota is restored);
- the legacy ``X-RateLimit-Limit/Remaining/Reset`` trio for the binding limit (the one that
  rejected, else the one with the least remaining); Reset is delta-seconds, as the draft's t;
- a 429: ``application/problem+json`` (RFC 9457) naming the limit, ``Retry-After`` in integer
  seconds (ceil, at least 1, so a client waiting exactly that long is not early) and
  ``Cache-Control: no-store``.

Integers only (structured-field Integers): remaining is floored, times are rounded up.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

from .algorithms import Decision

Header = tuple[bytes, bytes]
PROBLEM_TYPE = "tag:ratelimit-bench,2025:rate-limited"


def policy_item(name: str, quota: float, window_s: float | None) -> bytes:
    """One ``RateLimit-Policy`` member; ``window_s`` None for concurrency limits (no window)."""
    item = f'"{name}";q={math.floor(quota)}'
    return (item if window_s is None else f"{item};w={math.ceil(window_s)}").encode()


@dataclass(frozen=True, slots=True)
class QuotaText:
    """The parts of one limit's headers that never change, encoded once."""

    label: bytes
    """The quoted policy name, e.g. ``b'"per-client"'``."""
    item: bytes
    """Its ``RateLimit-Policy`` member."""
    quota: bytes
    """``X-RateLimit-Limit``."""

    @classmethod
    def of(cls, name: str, quota: float, window_s: float | None) -> QuotaText:
        return cls(f'"{name}"'.encode(), policy_item(name, quota, window_s), b"%d" % math.floor(quota))


def _seconds(value: float) -> int:
    return math.ceil(value) if 0 < value < math.inf else 0


def quota_headers(applied: Sequence[tuple[QuotaText, Decision]], binding: int, legacy: bool = True) -> list[Header]:
    """``applied``: (static text, decision) per limit, narrowest first; ``binding``: index of
    the limit the legacy trio describes; ``legacy``: add that trio. On every limited response:
    kept to bytes formatting."""
    states = []
    for text, d in applied:
        states.append(b"%s;r=%d;t=%d" % (text.label, d[1] if d[1] > 0 else 0, _seconds(d[3])))
    draft = [
        (b"ratelimit-policy", applied[0][0].item if len(applied) == 1 else b", ".join(t.item for t, _ in applied)),
        (b"ratelimit", states[0] if len(states) == 1 else b", ".join(states)),
    ]
    if not legacy:
        return draft
    text, d = applied[binding]
    return [
        *draft,
        (b"x-ratelimit-limit", text.quota),
        (b"x-ratelimit-remaining", b"%d" % (d[1] if d[1] > 0 else 0)),
        (b"x-ratelimit-reset", b"%d" % _seconds(d[3])),
    ]


def retry_after(decision: Decision) -> int:
    return max(1, math.ceil(decision.retry_after_s)) if math.isfinite(decision.retry_after_s) else 1


def rejection(limit_name: str, decision: Decision, quota_fields: list[Header]) -> tuple[list[Header], bytes]:
    """Headers and body of a 429 (no downstream work is done for it)."""
    wait = retry_after(decision)
    body = json.dumps({
        "type": PROBLEM_TYPE,
        "title": "Too Many Requests",
        "status": 429,
        "detail": f"rate limit {limit_name!r} exceeded; retry after {wait} s",
        "limit": limit_name,
        "retry_after_s": wait,
    }, separators=(",", ":")).encode()
    headers = [
        (b"content-type", b"application/problem+json"),
        (b"content-length", b"%d" % len(body)),
        (b"retry-after", b"%d" % wait),
        (b"cache-control", b"no-store"),
        *quota_fields,
    ]
    return headers, body
