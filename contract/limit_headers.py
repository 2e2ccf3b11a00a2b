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

Parsed by hand with the standard library only: this is the results contract (it imports nothing
but the standard library and pyarrow), and a foreign endpoint's malformed value must cost only
that value, never the answer nor the run: a strict RFC 9651 parser (http-sf, the tests' reference)
refuses a whole field for one bad member. Each value is read by the letter, and one that breaks it
is a finding (``LimitFields.findings``, the value quoted), never a number: Retry-After is
delay-seconds (digits only) or an HTTP-date; the drafts' r, t, q, w, their -06/-07 values and the
X-RateLimit-* values are non-negative integers (draft-ietf-httpapi-ratelimit-headers-12); a
reset earlier than Retry-After contradicts it. The judge, ``validate --url`` and a campaign's
header truth all read answers here, so they agree. ``parse_limit_fields`` never raises.
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
_INTEGER = re.compile(r"\d{1,15}")
"""A non-negative integer as the drafts (sf-integer) and RFC 9110's delay-seconds (1*DIGIT) write it."""
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
    findings: tuple[str, ...] = ()
    """The values that break the letter, each quoted: read as None, never as a number."""

    @property
    def has_quota(self) -> bool:
        return self.form != "none"

    @property
    def said(self) -> str:
        """What the answer said, for counting answers: its quota's form; else ``retry-after`` (a
        Retry-After alone); else ``malformed`` (only values that break the letter); else ``none``."""
        if self.has_quota:
            return self.form
        return "retry-after" if self.retry_after_s is not None else "malformed" if self.findings else "none"


class _Reading:
    """One answer being read: its findings, kept as each value breaks the letter."""

    def __init__(self) -> None:
        self.findings: list[str] = []

    def integer(self, text: str | None, where: str) -> float | None:
        """A non-negative integer, or None: absent (no finding) or malformed (a finding)."""
        if text is None:
            return None
        if _INTEGER.fullmatch(text.strip()):
            return float(text)
        self.findings.append(f"{where} {text.strip()!r}: not a non-negative integer")
        return None

    def retry_after(self, value: str | None, date: str | None, received_at: float) -> float | None:
        """Seconds to wait: delay-seconds, or an HTTP-date less the answer's Date (else the receipt time)."""
        if value is None:
            return None
        if _INTEGER.fullmatch(value.strip()):
            return float(value)
        when = _http_date(value)
        if when is None:
            self.findings.append(f"Retry-After {value.strip()!r}: neither delay-seconds (digits only) nor an HTTP-date")
            return None
        base = _http_date(date) if date else None
        return max(0.0, when - (received_at if base is None else base))


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


def _policy_window(read: _Reading, field: str | None, name: str | None) -> tuple[float | None, float | None]:
    """(q, w) of the RateLimit-Policy member named ``name`` (else the first): ``"n";q=100;w=60``
    (-08+) or ``100;w=60`` (-06/-07: the item is the quota; a name without q is no number)."""
    found = members(field)
    chosen = next((m for m in found if name is not None and m[0] == name), found[0] if found else None)
    if chosen is None:
        return None, None
    item, params = chosen
    quota = read.integer(params.get("q"), "RateLimit-Policy q") if "q" in params else \
        read.integer(item, "RateLimit-Policy") if item[:1] in (*"0123456789", "-", ".") else None
    return quota, read.integer(params.get("w"), "RateLimit-Policy w")


def _ietf_list(read: _Reading, state: str, policy: str | None) -> LimitFields | None:
    """-08 and later: the binding member of ``RateLimit`` (least remaining; of those, the latest
    reset), its policy's q and w."""
    found = [(item, read.integer(p.get("r"), "RateLimit r"), read.integer(p.get("t"), "RateLimit t"))
             for item, p in members(state) if "r" in p]
    found = [f for f in found if f[1] is not None]
    if not found:
        return None
    name, remaining, reset = min(found, key=lambda f: (f[1], -(f[2] or 0.0)))
    limit, window = _policy_window(read, policy, name)
    return LimitFields(limit=limit, window_s=window, remaining=remaining, reset_s=reset, form="ietf-list")


def _ietf_dict(read: _Reading, state: str, policy: str | None) -> LimitFields | None:
    """-07: ``RateLimit: limit=100, remaining=50, reset=5``."""
    values = dict(_param(item) for item, _ in members(state) if "=" in item)
    if "remaining" not in values and "limit" not in values:
        return None
    limit, window = _policy_window(read, policy, None)
    said = {name: read.integer(values.get(name), f"RateLimit {name}") for name in ("limit", "remaining", "reset")}
    return LimitFields(limit=said["limit"] if "limit" in values else limit, window_s=window,
                       remaining=said["remaining"], reset_s=said["reset"], form="ietf-dict")


def _trio(read: _Reading, h: Mapping[str, str], prefix: str, form: str, received_at: float) -> LimitFields | None:
    """Separate Limit / Remaining / Reset fields: the -06 draft's or the legacy X- ones. A limit
    may carry its policies (``100, 100;w=60``, drafts -01 to -03): the first number, the first w."""
    name = "RateLimit" if form == "ietf-fields" else "X-RateLimit"
    limit, remaining, reset = (h.get(f"{prefix}-{part}") for part in ("limit", "remaining", "reset"))
    if limit is None and remaining is None:
        return None
    found = members(limit)
    window = next((read.integer(p["w"], f"{name}-Limit w") for _, p in found if "w" in p), None)
    if window is None and form == "ietf-fields":
        window = _policy_window(read, h.get("ratelimit-policy"), None)[1]
    return LimitFields(limit=read.integer(found[0][0], f"{name}-Limit") if found else None, window_s=window,
                       remaining=read.integer(remaining, f"{name}-Remaining"),
                       reset_s=_reset(read.integer(reset, f"{name}-Reset"), received_at), form=form)


def _quota(read: _Reading, h: Mapping[str, str], received_at: float) -> LimitFields:
    """The quota an answer states, in the first form it uses (newest draft first)."""
    state, policy = h.get("ratelimit"), h.get("ratelimit-policy")
    quota = ((_ietf_list(read, state, policy) or _ietf_dict(read, state, policy)) if state else None) \
        or _trio(read, h, "ratelimit", "ietf-fields", received_at) \
        or _trio(read, h, "x-ratelimit", "x-ratelimit", received_at)
    if quota is None and policy:
        limit, window = _policy_window(read, policy, None)
        quota = LimitFields(limit=limit, window_s=window, form="ietf-list" if '"' in policy else "ietf-fields")
    return quota or LimitFields()


def parse_limit_fields(headers: Mapping[str, str] | Iterable[tuple[str, str]], received_at: float) -> LimitFields:
    """The limit fields of one answer (``headers`` by name, any case; ``received_at`` in epoch
    seconds, for HTTP-dates and epoch resets). Never raises: what cannot be read is None, and a
    finding when it breaks the letter; a reset earlier than Retry-After (beyond the rounding of
    an epoch or a date to whole seconds) is one too."""
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    h = {str(k).lower(): str(v) for k, v in pairs}
    read = _Reading()
    wait = read.retry_after(h.get("retry-after"), h.get("date"), received_at)
    quota = _quota(read, h, received_at)
    if wait is not None and quota.reset_s is not None and math.ceil(quota.reset_s) < math.floor(wait):
        read.findings.append(f"reset {quota.reset_s:g} s is earlier than Retry-After {wait:g} s")
    return LimitFields(wait, quota.limit, quota.window_s, quota.remaining, quota.reset_s, quota.form,
                       tuple(dict.fromkeys(read.findings)))


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
