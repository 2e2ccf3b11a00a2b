"""What a client is told: the quota headers on every limited response and the 429 itself.

- ``RateLimit-Policy`` / ``RateLimit``: draft-ietf-httpapi-ratelimit-headers-11 structured
  field lists, one member per limit that applied (``"per-client";q=100;w=60`` and
  ``"per-client";r=0;t=12``: quota, window, remaining, seconds until the quota is restored);
- the legacy ``X-RateLimit-Limit/Remaining/Reset`` trio for the binding limit (the one that
  rejected, else the one with the least remaining); Reset is delta-seconds, as the draft's t;
- a 429: ``application/problem+json`` (RFC 9457) naming the limit, ``Retry-After`` in integer
  seconds (ceil, at least 1, so a client waiting exactly that long is not early) and
  ``Cache-Control: no-store``;
- a 400 in the same form for a request that names its key twice (``repeated_key``).

Integers only (structured-field Integers): remaining is floored, times are rounded up, and a
fractional policy's q and w are scaled together to the integers that express the same rate
(2.5 per 0.5 s is ``q=5;w=1``), so a client that reads q/w learns the rate it will get.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from math import ceil, inf
from typing import Any

from .algorithms import Algorithm, Decision, Policy, PolicyError

Header = tuple[bytes, bytes]
PROBLEM_TYPE = "tag:ratelimit-bench,2025:rate-limited"
NEVER_TYPE = "tag:ratelimit-bench,2025:cost-exceeds-limit"
REPEATED_TYPE = "tag:ratelimit-bench,2025:repeated-key-header"
SF_INTEGER_MAX = 999_999_999_999_999
"""The largest structured-field Integer (RFC 9651: at most 15 digits)."""


def exact(x: float) -> Fraction:
    """The rational a float stands for: the simplest one within 2 ulps of it (5/3 for 100 / 60 =
    1.6666666666666667, 1/10 for 0.1, not 3602879701896397 / 2^55; 1/3 s for 0.1 / 0.3 =
    0.33333333333333337, a division of two rounded decimals)."""
    value, slack = Fraction(x), Fraction(2 * math.ulp(x))
    for digits in range(1, 18):
        simple = value.limit_denominator(10**digits)
        if abs(simple - value) <= slack:
            return simple
    return value


def advertised_quota(algorithm: Algorithm, policy: Policy, params: Any) -> tuple[int, int | None]:
    """The ``q`` and ``w`` of a limit's ``RateLimit-Policy``: whole numbers whose ratio is the
    long-run rate the params enforce, over the policy's window scaled as little as makes both
    whole. The rate is read from the numbers the user gave (L and W, or a ``--param`` rate,
    interval or limit that overrides them), never from a float derived by division, which has
    lost the fraction (0.1 / 0.3 s is 0.33333333333333337). Concurrency limits: ``q`` = most in
    flight, no ``w``. PolicyError when a q or w would need more than 15 digits (the largest
    structured-field Integer)."""
    if algorithm.release is not None:
        return math.floor(algorithm.max_cost(params)), None
    derived = algorithm.params_from_policy(policy)
    window, quota = exact(policy.window_s), exact(policy.limit)
    if getattr(params, "rate", None) != getattr(derived, "rate", None):  # token and leaky bucket
        quota = exact(params.rate) * window
    elif getattr(params, "interval_s", None) != getattr(derived, "interval_s", None):  # gcra
        quota = window / exact(params.interval_s)
    elif hasattr(params, "window_s"):  # the windows: limit per window_s, overridden or not
        window, quota = exact(params.window_s), exact(params.limit)
    scale = math.lcm(quota.denominator, window.denominator)
    q, w = int(quota * scale), int(window * scale)
    if max(q, w) > SF_INTEGER_MAX:
        raise PolicyError(f"RateLimit-Policy cannot tell this rate truthfully: {float(quota / window):g} per second "
                          f"needs a q or w of more than 15 digits; give limit and window_s fewer decimals")
    return q, w


def policy_item(name: str, quota: int, window: int | None) -> bytes:
    """One ``RateLimit-Policy`` member; ``window`` None for concurrency limits (no window)."""
    item = f'"{name}";q={quota}'
    return (item if window is None else f"{item};w={window}").encode()


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
    def of(cls, name: str, quota: int, window: int | None) -> QuotaText:
        """From ``advertised_quota``: X-RateLimit-Limit is the same q (over the same w)."""
        item = policy_item(name, quota, window)
        return cls(f'"{name}"'.encode(), item, (b"ratelimit-policy", item), (b"x-ratelimit-limit", b"%d" % quota))

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


def _problem(problem: dict[str, Any], fields: list[Header], status: int = 429) -> tuple[list[Header], bytes]:
    """An answer's headers and body: RFC 9457 problem details, then ``fields``."""
    body = json.dumps({"type": problem.pop("type"), "title": problem.pop("title"), "status": status, **problem},
                      separators=(",", ":")).encode()
    return [(b"content-type", b"application/problem+json"), (b"content-length", b"%d" % len(body)), *fields], body


def rejection(limit_name: str, decision: Decision, quota_fields: list[Header]) -> tuple[list[Header], bytes]:
    """Headers and body of a 429 (no downstream work is done for it)."""
    head, body = _encoded_rejection(limit_name, retry_after(decision))
    return [*head, *quota_fields], body


@functools.lru_cache(maxsize=4096)
def _encoded_rejection(limit_name: str, wait: int) -> tuple[tuple[Header, ...], bytes]:
    """A refusal's body and fixed headers, encoded once per (limit, Retry-After): under a flood
    every refusal of a key says the same, and a refusal must cost less than an admission."""
    problem = {"type": PROBLEM_TYPE, "title": "Too Many Requests", "detail": f"rate limit {limit_name!r} exceeded; retry after {wait} s",
               "limit": limit_name, "retry_after_s": wait}
    headers, body = _problem(problem, [(b"retry-after", b"%d" % wait), (b"cache-control", b"no-store")])
    return tuple(headers), body


def never_admitted(limit_name: str, cost: float, most: float, text: QuotaText) -> tuple[list[Header], bytes]:
    """Headers and body of a 429 for a request whose cost the limit can never admit (its
    decision's retry_after_s is inf): the problem details say so, and nothing suggests a time
    to come back (no Retry-After, no remaining or reset): only the quota, which explains it."""
    problem = {"type": NEVER_TYPE, "title": "Request cost exceeds the limit",
               "detail": f"this request costs {cost:g} but rate limit {limit_name!r} admits at most {most:g} per request; "
                         f"waiting will not help",
               "limit": limit_name, "cost": cost, "max_cost": most}
    return _problem(problem, [(b"cache-control", b"no-store"), text.policy, text.quota])


@functools.lru_cache(maxsize=8)
def repeated_key(header: str) -> tuple[tuple[Header, ...], bytes]:
    """Headers and body of the 400 for a request that names its key twice (``Identity.repeated``),
    encoded once per header name: one answer however many such requests arrive."""
    problem = {"type": REPEATED_TYPE, "title": "Bad Request",
               "detail": f"the {header} header is repeated: a request is counted by one key",
               "header": header}
    headers, body = _problem(problem, [(b"cache-control", b"no-store")], 400)
    return tuple(headers), body
