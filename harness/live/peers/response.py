"""What a limiter tells the client it refuses, asked over HTTP: one key driven into its limit, the
refusal's status, body type and headers read as a client reads them, and a retry sent when its
Retry-After says, to see whether the header told the truth.

Run on a peer after a campaign run's load (its requests carry PROBE_PREFIX ids, left out of the
run's decisions, and leave from the probe's own address, never a tested client's: in the client
log with the role ``probe``) and by ``validate --live`` on a peer or a URL. The suite's own targets answer
with an RFC 9457 problem, a Retry-After computed per decision and ``Cache-Control: no-store``
(targets/headers.py); a peer is judged by the same bar.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

import httpx
import pyarrow as pa
import pyarrow.compute as pc

from contract.limit_headers import parse_limit_fields
from contract.schema import CLIENT_SCHEMA, ROLE_PROBE

PROBE_PREFIX = "rb-probe-"
"""The request ids of the probe's requests (and its API key): not the scenario's traffic."""
PROBE_ROUTE = "/api/items"
MAX_PROBE_S = 10.0
"""Driving one key into the limit gives up after this long."""
MAX_RETRY_WAIT_S = 5.0
"""A longer Retry-After is read but not waited for (a run would wait minutes)."""
HELD_MS = 100.0
"""An answer this late to a lone sequential request was held by the limiter, not slow: loopback
answers in a few ms (a queueing limiter, NGINX's limit_req without nodelay, paces a burst)."""


@dataclass
class Refusal:
    """One key driven into the limit: the requests sent and the first refusal."""

    sent_t: list[float] = field(default_factory=list)
    """When each request was sent (time.time()), in order."""
    done_t: list[float] = field(default_factory=list)
    """When each answer was read, in order (the retry's too, after the others)."""
    statuses: list[int] = field(default_factory=list)
    status: int | None = None
    """The first refusal's status; None when none came within the requests allowed."""
    content_type: str | None = None
    retry_after: str | None = None
    cache_control: str | None = None
    ratelimit_headers: list[str] = field(default_factory=list)
    """RateLimit / RateLimit-Policy / X-RateLimit-* header names it sent (drafts and the de facto ones)."""
    retry_after_s: float | None = None
    """Retry-After in seconds (delay-seconds or an HTTP date: ``contract.limit_headers``)."""
    letter: list[str] = field(default_factory=list)
    """The limit fields' values that break the letter, each quoted (``contract.limit_headers``)."""
    retry_status: int | None = None
    """The status of the one retry sent at Retry-After (None: not sent)."""
    tag: str = ""
    """Put after PROBE_PREFIX in its request ids: a second try's ids are not the first's."""
    tries: int = 1
    """2 when the first try read no refusal and the probe tried again (``refusal_read``)."""

    @property
    def body_type(self) -> str | None:
        """The refusal's media type, without parameters (None: no Content-Type)."""
        return self.content_type.split(";")[0].strip() if self.content_type else None

    @property
    def held_ms(self) -> float:
        """The longest any of the sequence's answers took (the retry's left out), in ms."""
        waits = [done - sent for sent, done in zip(self.sent_t[:len(self.statuses)], self.done_t[:len(self.statuses)])]
        return 1000.0 * max(waits, default=0.0)

    @property
    def round_trip_s(self) -> float:
        """The fastest answer of the sequence: a request's round trip when nothing held it."""
        return min((done - sent for sent, done in zip(self.sent_t, self.done_t[:len(self.statuses)])), default=0.0)

    @property
    def no_store(self) -> bool:
        return "no-store" in (self.cache_control or "")

    def findings(self, refused: frozenset[int] = frozenset({429})) -> list[str]:
        """What a client is not told, one phrase each; empty when the refusal says it all."""
        if self.status is None:
            errors = sorted({s for s in self.statuses if s >= 500})
            if self.statuses and len(errors) and all(s >= 500 for s in self.statuses):
                return [f"every one of its {len(self.statuses)} answers was an error ({', '.join(map(str, errors))}): "
                        "the endpoint fails, so whether it limits could not be read"]
            if self.held_ms >= HELD_MS:
                return [f"no refusal within {len(self.statuses)} sequential requests at one key: it held them "
                        f"instead (answers up to {self.held_ms:,.0f} ms late): it delays a burst rather than "
                        "refusing it, as NGINX's limit_req does without nodelay"]
            return [f"no refusal within {len(self.statuses)} sequential requests at one key: its 429 could not be read"]
        out = []
        if self.status != 429:
            out.append(f"it refuses with {self.status}, not 429: clients and CDNs read it as an outage")
        kind = self.body_type or "no Content-Type"
        if not kind.endswith("json"):
            out.append(f"its {self.status} is {kind}, not application/problem+json: a client cannot read why")
        if self.retry_after is None:
            out.append("no Retry-After: a client cannot tell when to retry")
        elif self.retry_status in refused:
            out.append(f"Retry-After {self.retry_after} lied: the retry sent {self.retry_after_s:g} s later was "
                       f"refused again ({self.retry_status})")
        if not self.no_store:
            out.append("no Cache-Control: no-store: a shared cache may serve one client's refusal to others")
        return out + self.letter

    def report(self, fix: str | None = None, refused: frozenset[int] = frozenset({429})) -> dict[str, Any]:
        """run.json's ``response``: the refusal, its findings and the config lines that fix them."""
        raw = {k: v for k, v in asdict(self).items() if k not in ("sent_t", "done_t", "statuses", "tag")}
        findings = self.findings(refused)
        return {**raw, "requests": len(self.statuses), "findings": findings, "fix": fix if findings else None}


def refusal(url: str, max_requests: int, *, refused: frozenset[int] = frozenset({429}),
            max_wait_s: float = MAX_RETRY_WAIT_S, timeout_s: float = 5.0, max_s: float = MAX_PROBE_S,
            source: str | None = None, tag: str = "") -> Refusal:
    """Requests at one key (its own API key; from ``source``, an address of its own, when given),
    one after the other on one connection, until the first refusal (a status in ``refused``), at
    most ``max_requests`` or ``max_s``; then, when Retry-After is at most ``max_wait_s``, one retry
    that long after the refusal. httpx errors propagate (the caller says what it was)."""
    out = Refusal(tag=tag)
    give_up = time.monotonic() + max_s
    headers = {"x-api-key": f"{PROBE_PREFIX}key", "x-client-id": "probe", "x-client-class": "probe"}
    transport = httpx.HTTPTransport(local_address=source) if source else None
    with httpx.Client(timeout=timeout_s, transport=transport) as http:
        for i in range(max_requests):
            out.sent_t.append(time.time())
            r = http.get(url + PROBE_ROUTE, headers={**headers, "x-request-id": f"{PROBE_PREFIX}{tag}{i}"})
            out.done_t.append(time.time())
            out.statuses.append(r.status_code)
            if r.status_code in refused:
                break
            if time.monotonic() > give_up:  # a queueing limiter (NGINX without nodelay) holds a
                return out                  # sequential client instead of refusing it
        else:
            return out
        done = time.time()
        out.status, out.content_type = r.status_code, r.headers.get("content-type")
        out.retry_after, out.cache_control = r.headers.get("retry-after"), r.headers.get("cache-control")
        out.ratelimit_headers = sorted(h for h in r.headers if h.lower().startswith(("ratelimit", "x-ratelimit")))
        fields = parse_limit_fields(r.headers.items(), done)
        out.retry_after_s, out.letter = fields.retry_after_s, list(fields.findings)
        if out.retry_after_s is not None and out.retry_after_s <= max_wait_s:
            time.sleep(max(0.0, done + out.retry_after_s - time.time()))
            out.sent_t.append(time.time())
            out.retry_status = http.get(url + PROBE_ROUTE, headers={**headers, "x-request-id": f"{PROBE_PREFIX}{tag}retry"}
                                        ).status_code
            out.done_t.append(time.time())
    return out


def refusal_read(url: str, max_requests: int, *, refill_s: float, **options: Any) -> Refusal:
    """``refusal``, tried once more ``refill_s`` later (the key full again; at most
    MAX_RETRY_WAIT_S) when the first try read no refusal and its answers came late: a queueing
    limiter holds the second try too, while a busy moment of a shared machine, where one request
    took longer than the limiter needs to refill a token, seldom lasts through both. The second
    try's reading is the one kept (its ``tries`` is 2)."""
    found = refusal(url, max_requests, **options)
    if found.status is not None or found.held_ms < HELD_MS:
        return found
    time.sleep(min(max(0.0, refill_s), MAX_RETRY_WAIT_S))
    again = refusal(url, max_requests, tag="again-", **options)
    again.tries = 2
    return again


def probe_log(found: Refusal, source: str | None) -> pa.Table:
    """The probe's requests as client log rows (role ``probe``): its sequence, then its retry."""
    n = len(found.statuses)
    ids = [f"{PROBE_PREFIX}{found.tag}{i}" for i in range(n)] + [f"{PROBE_PREFIX}{found.tag}retry"] * (len(found.sent_t) - n)
    statuses = found.statuses + ([found.retry_status or 0] if len(found.sent_t) > n else [])
    return pa.table({
        "request_id": ids, "intended_t": found.sent_t, "sent_t": found.sent_t, "done_t": found.done_t,
        "status": statuses, "attempt": [1] * len(ids), "limit_fields": [None] * len(ids),
        "client_address": [source] * len(ids),
        "role": [ROLE_PROBE] * len(ids),
    }, schema=CLIENT_SCHEMA)


def without_probe(decisions: pa.Table) -> pa.Table:
    """A run's decisions without the probe's requests (they are not the scenario's traffic)."""
    probe = pc.fill_null(pc.starts_with(decisions["request_id"], PROBE_PREFIX), False)
    return decisions.filter(pc.invert(probe))
