"""The limit fields of one HTTP answer, read as a client reads them, in every form in use.

- ``Retry-After``: delta-seconds or an HTTP-date (RFC 9110 10.2.3; a date is taken relative to the
  answer's ``Date``, else to the time it was received);
- the IETF draft (draft-ietf-httpapi-ratelimit-headers), in its three shapes:
  -06 and before: separate ``RateLimit-Limit`` / ``-Remaining`` / ``-Reset`` fields (plus
  ``RateLimit-Policy: 100;w=60``); -07: one dictionary ``RateLimit: limit=100, remaining=50,
  reset=5``; -08 and later: lists of named items, ``RateLimit: "default";r=50;t=30`` with
  ``RateLimit-Policy: "default";q=100;w=60``;
- the legacy ``X-RateLimit-Limit/-Remaining/-Reset`` trio (Reset as delta-seconds, or as epoch
  seconds or milliseconds, as GitHub and others send it).

Parsed by hand, leniently, with the standard library only: this is the results contract (it
imports nothing but the standard library and pyarrow), and a foreign endpoint's malformed value
must cost only that value, never the answer nor the run: a strict RFC 9651 parser (http-sf, the
tests' reference) refuses a whole field for one bad member. ``parse_limit_fields`` never raises.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

EPOCH_S = 1e9
"""A reset larger than this is an epoch time (2001 onwards), not seconds from now."""
EPOCH_MS = 1e12
_NUMBER = re.compile(r"-?\d{1,15}(\.\d{1,6})?")
_MEMBER_SPLIT = re.compile(r',(?=(?:[^"]*"[^"]*")*[^"]*$)')
"""Commas outside double quotes: the members of a structured-field list or dictionary."""


@dataclass(frozen=True)
class LimitFields:
    """What one answer says about its limit; None where it says nothing (or nothing readable)."""

    retry_after_s: float | None = None
    limit: float | None = None
    """The quota (q, limit): cost units per ``window_s``."""
    window_s: float | None = None
    remaining: float | None = None
    reset_s: float | None = None
    """Seconds from the answer until the quota is restored."""
    form: str = "none"
    """Which shape the quota came in: ``ietf-list`` (-08+), ``ietf-dict`` (-07), ``ietf-fields``
    (-06), ``x-ratelimit``, or ``none``."""

    @property
    def has_quota(self) -> bool:
        return self.form != "none"


def number(text: str | None) -> float | None:
    """A finite, non-negative decimal, or None (never raises)."""
    if text is None:
        return None
    text = text.strip().strip('"')
    if _NUMBER.fullmatch(text) is None:
        return None
    value = float(text)
    return value if math.isfinite(value) and value >= 0 else None


def _param(text: str) -> tuple[str, str]:
    key, _, value = text.partition("=")
    return key.strip().lower(), value.strip()


def members(field: str | None) -> list[tuple[str, dict[str, str]]]:
    """A structured-field list or dictionary, leniently: per member its item (a dictionary
    member's ``key=value`` kept whole) and its parameters by name."""
    if not field:
        return []
    out = []
    for raw in _MEMBER_SPLIT.split(field):
        item, *params = raw.split(";")
        out.append((item.strip(), dict(_param(p) for p in params if p.strip())))
    return out


def retry_after(value: str | None, date: str | None, received_at: float) -> float | None:
    """Seconds to wait: delta-seconds, or an HTTP-date less the answer's Date (else the receipt time)."""
    if value is None:
        return None
    seconds = number(value)
    if seconds is not None:
        return seconds
    when = _http_date(value)
    if when is None:
        return None
    base = _http_date(date) if date else None
    return max(0.0, when - (received_at if base is None else base))


def _http_date(text: str) -> float | None:
    try:
        return parsedate_to_datetime(text.strip()).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def _reset(value: float | None, received_at: float) -> float | None:
    """A reset as seconds from now: epoch seconds and epoch milliseconds are converted."""
    if value is None:
        return None
    if value > EPOCH_MS:
        return max(0.0, value / 1e3 - received_at)
    return max(0.0, value - received_at) if value > EPOCH_S else value


def _policy_window(field: str | None, name: str | None) -> tuple[float | None, float | None]:
    """(q, w) of the RateLimit-Policy member named ``name`` (else the first): ``"n";q=100;w=60``
    (-08+) or ``100;w=60`` (-06/-07)."""
    found = members(field)
    chosen = next((m for m in found if name is not None and m[0] == name), found[0] if found else None)
    if chosen is None:
        return None, None
    item, params = chosen
    return number(params.get("q")) if "q" in params else number(item), number(params.get("w"))


def _ietf_list(state: str, policy: str | None) -> LimitFields | None:
    """-08 and later: the binding member (least remaining) of ``RateLimit``, its policy's q and w."""
    found = [(item, number(p.get("r")), number(p.get("t"))) for item, p in members(state) if "r" in p]
    found = [f for f in found if f[1] is not None]
    if not found:
        return None
    name, remaining, reset = min(found, key=lambda f: f[1])
    limit, window = _policy_window(policy, name)
    return LimitFields(limit=limit, window_s=window, remaining=remaining, reset_s=reset, form="ietf-list")


def _ietf_dict(state: str, policy: str | None) -> LimitFields | None:
    """-07: ``RateLimit: limit=100, remaining=50, reset=5``."""
    values = dict(_param(item) for item, _ in members(state) if "=" in item)
    if "remaining" not in values and "limit" not in values:
        return None
    limit, window = _policy_window(policy, None)
    return LimitFields(limit=number(values.get("limit")) if "limit" in values else limit, window_s=window,
                       remaining=number(values.get("remaining")), reset_s=number(values.get("reset")),
                       form="ietf-dict")


def _trio(h: Mapping[str, str], prefix: str, form: str, received_at: float) -> LimitFields | None:
    """Separate Limit / Remaining / Reset fields: the -06 draft's or the legacy X- ones. A limit
    may carry its policies (``100, 100;w=60``, drafts -01 to -03): the first number, the first w."""
    limit, remaining, reset = (h.get(f"{prefix}-{part}") for part in ("limit", "remaining", "reset"))
    if limit is None and remaining is None:
        return None
    found = members(limit)
    window = next((number(p["w"]) for _, p in found if "w" in p), None)
    if window is None and form == "ietf-fields":
        window = _policy_window(h.get("ratelimit-policy"), None)[1]
    return LimitFields(limit=number(found[0][0]) if found else None, window_s=window, remaining=number(remaining),
                       reset_s=_reset(number(reset), received_at), form=form)


def parse_limit_fields(headers: Mapping[str, str] | Iterable[tuple[str, str]], received_at: float) -> LimitFields:
    """The limit fields of one answer (``headers`` by name, any case; ``received_at`` in epoch
    seconds, for HTTP-dates and epoch resets). Never raises: what cannot be read is None."""
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    h = {str(k).lower(): str(v) for k, v in pairs}
    wait = retry_after(h.get("retry-after"), h.get("date"), received_at)
    state, policy = h.get("ratelimit"), h.get("ratelimit-policy")
    quota = ((_ietf_list(state, policy) or _ietf_dict(state, policy)) if state else None) \
        or _trio(h, "ratelimit", "ietf-fields", received_at) or _trio(h, "x-ratelimit", "x-ratelimit", received_at)
    if quota is None and policy:
        limit, window = _policy_window(policy, None)
        quota = LimitFields(limit=limit, window_s=window, form="ietf-list" if '"' in policy else "ietf-fields")
    quota = quota or LimitFields()
    return LimitFields(wait, quota.limit, quota.window_s, quota.remaining, quota.reset_s, quota.form)


def is_limit_header(name: str) -> bool:
    """Whether a header (lower case) is one of the limit fields a client log keeps."""
    return name == "retry-after" or name.startswith(("ratelimit", "x-ratelimit"))


def limit_lines(headers: Mapping[str, str] | Iterable[tuple[str, str]]) -> str | None:
    """An answer's limit fields as the client log keeps them: ``name: value`` lines (names lower
    case), with its ``Date`` when it has any (an HTTP-date Retry-After is relative to it); None
    when it has none. Kept raw and parsed by ``parse_lines`` when read: the load generator's time
    goes to sending, not parsing."""
    pairs = [(str(k).lower(), str(v)) for k, v in (headers.items() if isinstance(headers, Mapping) else headers)]
    kept = [f"{k}: {v}" for k, v in pairs if is_limit_header(k)]
    if not kept:
        return None
    kept += [f"date: {v}" for k, v in pairs if k == "date"][:1]
    return "\n".join(kept)


def parse_lines(text: str | None, received_at: float) -> LimitFields:
    """The limit fields of a client log's ``limit_fields`` cell (``limit_lines``); none for None."""
    if not text:
        return LimitFields()
    pairs = (line.partition(":") for line in text.split("\n"))
    return parse_limit_fields(((name, value.strip()) for name, _, value in pairs), received_at)
