"""The HAProxy stick-table peer, configured from the same policy vocabulary, the model that
predicts it, and the reader of a user's own HAProxy file (``validate``).

HAProxy limits by a frequency counter of a stick table, ``http_req_rate(W)``, and a deny rule,
``http-request deny deny_status 429 if { sc_http_req_rate(0) gt L }``. ``track-sc0`` counts every
request *before* the deny rule reads the rate, so denied requests count: a client that keeps
sending stays refused. Its periods start at a key's first request, not on the clock, and the
read is floored. No suite algorithm does all that (the closest is sliding_window_counter, which
counts only admitted requests in clock-aligned windows), so the model is HAProxy's own counter,
``haproxy_freq_ctr`` (targets/algorithms/, a peer model: docs/peers.md says why and how close).
HAProxy has no burst of its own: a burst B becomes B per B x W / L (the same long-run rate).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from targets.algorithms import Policy

from .base import ConfigLimit, Peer, PeerConfig, PeerError
from .haproxy_config import read_haproxy

MAX_PERIOD_MS = 2**31 - 1
"""HAProxy's delays are signed 32-bit ms."""


@dataclass(frozen=True)
class HaproxyLimit:
    """A policy in HAProxy's terms."""

    limit: int
    """``gt L``: refused when the rate read exceeds it (the policy's burst)."""
    period_ms: int
    """``http_req_rate(<period_ms>)``: burst x W / L."""


def haproxy_limit(policy: Policy) -> HaproxyLimit:
    """The policy as a stick table and a deny rule. HAProxy has no burst of its own: the policy's
    B at once and L/W in the long run is B requests per B x W / L (``2 per 1 s, burst 10``:
    ``http_req_rate(5000) gt 10``; without a burst, L per W as is). B must be a whole number of
    requests and the period a whole number of ms; anything else is refused (HAProxy would round)."""
    burst = policy.effective_burst
    if burst != int(burst) or burst < 1:
        what = f"burst {burst:g}" if policy.burst is not None else f"limit {burst:g}"
        raise PeerError(f"peer haproxy: {what} is not a whole number of requests (sc_http_req_rate counts requests)")
    period_s = burst * policy.window_s / policy.limit
    period = round(period_s * 1000)
    if abs(period_s * 1000 - period) > 1e-6 or not 1 <= period <= MAX_PERIOD_MS:
        raise PeerError(f"peer haproxy: {burst:g} requests per {period_s:.6g} s (burst x W / L) is not a whole "
                        f"number of ms up to {MAX_PERIOD_MS} (http_req_rate's period)")
    return HaproxyLimit(int(burst), period)


class Haproxy(Peer):
    name = system = "haproxy"
    summary = ("HAProxy stick table http_req_rate(W), deny 429 if gt L (denied requests count), keyed by the "
               "API-key header else the client address; modelled by haproxy_freq_ctr "
               "(simulate --algorithm haproxy_http_req_rate)")
    binary = package = "haproxy"
    runs_files = True

    def model(self, policy: Policy) -> tuple[str, Policy]:
        h = haproxy_limit(policy)
        return "haproxy_freq_ctr", Policy(h.limit, h.period_ms / 1000)

    def recognises(self, text: str) -> bool:
        return re.search(r"^(frontend|listen)\s", text, re.MULTILINE) is not None and "http_req_rate" in text

    def read_config(self, text: str, source: str = "config") -> PeerConfig:
        """The limit, keyed as the tracking rule says, refused with the deny's status (403 unless
        ``deny_status``), Retry-After where the deny or an ``http-after-response`` line sets it."""
        policy = self.policy_from_config(text)
        f = read_haproxy(text)
        return PeerConfig([ConfigLimit(f.section.name or self.name, policy, f.key, f.section.line)],
                          retry_after=f.retry_after, reject_status=f.reject_status)

    def policy_from_config(self, text: str) -> Policy:
        """The limit of a user's HAProxy file: one ``stick-table ... store http_req_rate(P)`` and one
        ``http-request deny`` whose only condition is ``sc_http_req_rate(N) gt|ge L`` (inline or a
        named ``acl``). Lines that do not limit (frontends, servers, timeouts) are not read."""
        return _ConfigReader(text).policy(self.model)


_UNITS = {"us": 0.001, "ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_RATE = re.compile(r"^sc(?:_http_req_rate\((\d)(?:,[^)]*)?\)|(\d)_http_req_rate(?:\([^)]*\))?)$")


def _period_ms(text: str, where: str) -> float:
    m = re.fullmatch(r"(\d+)(us|ms|s|m|h|d)?", text)
    if not m:
        raise PeerError(f"{where}: http_req_rate({text}): not a HAProxy time (a number and us, ms, s, m, h or d)")
    return int(m[1]) * _UNITS[m[2] or "ms"]


class _ConfigReader:
    """One pass over the lines; every message names the line."""

    def __init__(self, text: str) -> None:
        self.lines = [(n, line.split("#", 1)[0].split()) for n, line in enumerate(text.splitlines(), 1)]
        self.acls: dict[str, tuple[int, list[str]]] = {}
        self.tracked = {w.removeprefix("track-sc") for _, words in self.lines for w in words if w.startswith("track-sc")}

    def policy(self, model) -> Policy:
        periods, denies = [], []
        for n, words in self.lines:
            if not words:
                continue
            if words[0] == "stick-table":
                periods += self._table(n, words)
            elif words[0] == "acl" and len(words) > 2 and _RATE.match(words[2]):
                self.acls[words[1]] = (n, words[2:])
            elif words[0] == "http-request" and self._mentions_rate(words):
                denies.append(self._deny(n, words))
        if len(periods) != 1:
            raise PeerError("haproxy config: no stick-table stores http_req_rate(<period>)" if not periods else
                            f"haproxy config line {periods[1][0]}: a second http_req_rate stick table; validate reads one")
        if len(denies) != 1:
            raise PeerError("haproxy config: no 'http-request deny ... if { sc_http_req_rate(0) gt L }' rule" if not denies
                            else f"haproxy config line {denies[1][0]}: a second deny on the request rate; validate reads one")
        (table_line, period), (_, limit) = periods[0], denies[0]
        if period != int(period):
            raise PeerError(f"haproxy config line {table_line}: http_req_rate period below 1 ms")
        policy = Policy(limit, period / 1000)
        model(policy)
        return policy

    def _table(self, n: int, words: list[str]) -> list[tuple[int, float]]:
        stored = words[words.index("store") + 1].split(",") if "store" in words[:-1] else []
        rates = [s for s in stored if s.startswith("http_req_rate")]
        if not rates:
            return []
        m = re.fullmatch(r"http_req_rate\(([^)]*)\)", rates[0])
        if not m:
            raise PeerError(f"haproxy config line {n}: {rates[0]}: expected http_req_rate(<period>)")
        return [(n, _period_ms(m[1], f"haproxy config line {n}"))]

    def _mentions_rate(self, words: list[str]) -> bool:
        return any(_RATE.match(w.lstrip("!")) or w.lstrip("!") in self.acls for w in words)

    def _deny(self, n: int, words: list[str]) -> tuple[int, int]:
        """(line, L) of ``http-request deny [deny_status S] if <rate condition>``."""
        where = f"haproxy config line {n}"
        if words[1] != "deny":
            raise PeerError(f"{where}: http-request {words[1]} on the request rate; validate reads only deny")
        if "if" not in words:
            raise PeerError(f"{where}: the rate is used without 'if'; validate reads 'deny ... if <rate> gt L'")
        cond = words[words.index("if") + 1:]
        if cond[:1] == ["{"] and cond[-1:] == ["}"]:
            cond = cond[1:-1]
        elif len(cond) == 1 and cond[0] in self.acls:
            n, cond = self.acls[cond[0]]
            where = f"haproxy config line {n}"
        if len(cond) != 3 or not _RATE.match(cond[0]) or cond[1] not in ("gt", "ge") or not cond[2].isdigit():
            raise PeerError(f"{where}: validate reads a deny whose only condition is "
                            f"'sc_http_req_rate(0) gt L' (or ge L), not: {' '.join(cond)}")
        counter = next(g for g in _RATE.match(cond[0]).groups() if g)
        if counter not in self.tracked:
            raise PeerError(f"{where}: {cond[0]} reads sticky counter {counter}, which no track-sc{counter} rule tracks")
        limit = int(cond[2]) if cond[1] == "gt" else int(cond[2]) - 1
        if limit < 1:
            raise PeerError(f"{where}: {' '.join(cond)} refuses every request")
        return n, limit
