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
from functools import lru_cache
from math import ceil, inf

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
    policy: Header
    """The ``RateLimit-Policy`` field when this limit is the only one."""
    quota: Header
    """The ``X-RateLimit-Limit`` field."""

    @classmethod
    def of(cls, name: str, quota: float, window_s: float | None) -> QuotaText:
        item = policy_item(name, quota, window_s)
        return cls(f'"{name}"'.encode(), item, (b"ratelimit-policy", item), (b"x-ratelimit-limit", b"%d" % math.floor(quota)))

    def at(self, quota: float) -> QuotaText:
        """This limit with the quota it has right now: the adaptive limiter's moves, and a
        client told the ceiling it may one day reach would misread its remaining."""
        return _moved(self.label, int(quota))


@lru_cache(maxsize=1024)
def _moved(label: bytes, quota: int) -> QuotaText:
    """Cached: an adaptive limit takes few distinct integer values, and this is per request."""
    item = b"%s;q=%d" % (label, quota)
    return QuotaText(label, item, (b"ratelimit-policy", item), (b"x-ratelimit-limit", b"%d" % quota))


def _remaining(d: Decision) -> bytes:
    return b"%d" % d[1] if d[1] > 0 else b"0"


def reset_seconds(reset_s: float) -> int:
    """The ``t`` (and X-RateLimit-Reset) a client is told: rounded up, 0 when nothing is
    pending or the quota never comes back."""
    return ceil(reset_s) if 0 < reset_s < inf else 0


def _reset(d: Decision) -> bytes:
    return b"%d" % reset_seconds(d[3])


def limit_headers(text: QuotaText, d: Decision, legacy: bool = True) -> list[Header]:
    """The quota headers when one limit applied (the common case), built from the fewest
    formats: they go on every admitted response, where a microsecond is a percent of the
    target's throughput (docs/targets.md, Benchmark)."""
    left, wait = d[1], d[3]  # _remaining and _reset inlined: two calls are a third of this function
    remaining = b"%d" % left if left > 0 else b"0"
    reset = b"%d" % ceil(wait) if 0 < wait < inf else b"0"
    state = (b"ratelimit", b"%s;r=%s;t=%s" % (text.label, remaining, reset))
    if not legacy:
        return [text.policy, state]
    return [text.policy, state, text.quota, (b"x-ratelimit-remaining", remaining), (b"x-ratelimit-reset", reset)]


def quota_headers(applied: Sequence[tuple[QuotaText, Decision]], binding: int, legacy: bool = True) -> list[Header]:
    """``applied``: (static text, decision) per limit, narrowest first; ``binding``: index of
    the limit the legacy trio describes; ``legacy``: add that trio."""
    if len(applied) == 1:
        return limit_headers(*applied[0], legacy)
    states = [b"%s;r=%s;t=%s" % (text.label, _remaining(d), _reset(d)) for text, d in applied]
    draft = [(b"ratelimit-policy", b", ".join(t.item for t, _ in applied)), (b"ratelimit", b", ".join(states))]
    if not legacy:
        return draft
    text, d = applied[binding]
    return [*draft, text.quota, (b"x-ratelimit-remaining", _remaining(d)), (b"x-ratelimit-reset", _reset(d))]


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
