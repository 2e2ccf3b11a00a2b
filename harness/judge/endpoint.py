"""An endpoint seen only through its answers, with every request on a key of its own.

``Endpoint`` is what the hunt needs: a clock, a wait, and ``send(key, role)`` on a fresh key the
hunt numbers. ``HttpEndpoint`` is a real URL: a key is an ``X-API-Key``-like header value or a
source address of its own (Linux routes all of 127.0.0.0/8 to loopback, so a limiter on this
machine keyed by address sees each probe as a client of its own); it holds the caps (requests,
rate, the session's time) and the client log, where every request is written with its role.
Each request is bounded as a whole (``bounded.py``: status line, headers and body within
``timeout_s``, the body up to a cap); an answer other than 2xx or 429 (a redirect, 401/403, 5xx)
leaves nothing to judge and says so, counting what came before.
"""

from __future__ import annotations

import ipaddress
import secrets
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import urlsplit

import httpx

from analysis.header_truth import Answer
from contract.errors import BadInput
from contract.limit_headers import parse_limit_fields

from .bounded import BODY_CAP, BodyTooLong, BoundedClient

NEEDS_KEY = (401, 403, 407)
MAX_REQUESTS, MAX_RATE, MAX_WAIT_S, TIMEOUT_S, MAX_TIME_S = 1000, 100.0, 30.0, 5.0, 300.0
"""Conservative defaults (``judge`` and ``validate --url``): 1,000 requests at most, 100 per second
at most (a window of up to 10 s is judged in under 60 s), 30 s at most for a quota to come back,
5 s per answer, its body included, 300 s for the whole session."""
REFUSAL_HEADERS = ("content-type", "retry-after", "cache-control")


class JudgeError(BadInput):
    """The endpoint cannot be judged as given: it times out, fails, or needs a key. ``measured``:
    the session's partial measurement, where a caller keeps it (``verdict.measurement``)."""

    measured: dict | None = None


class CapReached(Exception):
    """A bound of the session is reached (its requests, its time): the hunt stops and is judged
    on what it has. ``bound`` names it, ``flag`` the option that raises it."""

    def __init__(self, bound: str, flag: str) -> None:
        super().__init__(bound)
        self.bound, self.flag = bound, flag

    @classmethod
    def requests(cls) -> CapReached:
        return cls("the request cap", "--max-requests")

    @classmethod
    def time(cls, seconds: float) -> CapReached:
        return cls(f"the time bound ({seconds:g} s)", "--max-time")


@dataclass(frozen=True)
class Sent:
    """One request in the client log: its answer, why it was sent, and from where."""

    answer: Answer
    role: str
    address: str


class Endpoint(Protocol):
    log: list[Sent]
    before: list[Sent]
    """Requests sent before the judgement (the key's discovery, ``keys.py``): in the client log
    and the caps, never fitted on."""

    def now(self) -> float: ...

    def sleep_until(self, t: float) -> None: ...

    def send(self, key: int, role: str) -> Answer: ...


@dataclass(frozen=True)
class KeySpec:
    """How the endpoint's limiter tells clients apart: ``ip`` (the source address) or
    ``header:NAME[=PREFIX]`` (fresh values PREFIX<run>-<n>)."""

    header: str | None = None
    prefix: str = "judge-"

    @classmethod
    def parse(cls, text: str) -> KeySpec:
        if text == "ip":
            return cls()
        kind, _, rest = text.partition(":")
        name, _, prefix = rest.partition("=")
        if kind != "header" or not name.strip():
            raise JudgeError(f"--key {text!r}: expected ip or header:NAME[=PREFIX]")
        return cls(name.strip(), prefix or "judge-")


@dataclass
class HttpEndpoint:
    """A real URL, within ``max_requests`` and ``max_rate`` per second, ``timeout_s`` per request
    (all of it) and ``max_time_s`` for the session."""

    url: str
    keys: KeySpec
    max_requests: int
    max_rate: float
    timeout_s: float = TIMEOUT_S
    max_time_s: float = MAX_TIME_S
    log: list[Sent] = field(default_factory=list)
    before: list[Sent] = field(default_factory=list)
    refusal_headers: dict[str, str] | None = None
    """The first refusal's headers a client reads (``REFUSAL_HEADERS`` and any limit fields)."""
    run: str = field(default_factory=lambda: secrets.token_hex(3))
    on_sent: Callable[[Sent], None] | None = None
    """Told each request once answered (a progress display)."""
    _clients: dict[str, BoundedClient] = field(default_factory=dict)
    _last: float = 0.0
    loopback: bool = field(init=False)
    """Whether probes can be sent from fresh source addresses (an endpoint on 127.0.0.0/8)."""
    ends: float = field(init=False)
    """When the session must be done (epoch seconds): ``max_time_s`` after it was made."""

    def __post_init__(self) -> None:
        host = urlsplit(self.url).hostname or ""
        self.loopback = _loopback(host)
        if self.keys.header is None and not self.loopback:
            raise JudgeError(f"--key ip needs an endpoint on 127.0.0.0/8 to send from fresh addresses, not {host!r};"
                             " give --key header:NAME")
        base = int.from_bytes(secrets.token_bytes(2), "big") % 250 + 2
        self._net = (127, base // 16 + 1, (base % 16) * 16)
        self.ends = time.time() + self.max_time_s

    def address(self, key: int) -> str:
        """Key n's own source address (127.a.b.c, never 127.0.0.1), or 127.0.0.1 for header keys."""
        if self.keys.header is not None:
            return "127.0.0.1"
        a, b, c = self._net
        return f"{a}.{b}.{c + key // 250}.{key % 250 + 2}"

    def identity_address(self, n: int) -> str:
        """The key discovery's n-th source address (a block apart from the probes'), or 127.0.0.1
        off loopback."""
        if not self.loopback:
            return "127.0.0.1"
        a, b, c = self._net
        return f"{a}.{b + 100}.{c}.{n + 2}"

    def set_aside(self) -> None:
        """What was sent so far goes to ``before``: the judgement's log starts empty."""
        self.before += self.log
        self.log = []

    def now(self) -> float:
        return time.time()

    def sleep_until(self, t: float) -> None:
        """Wait until ``t``, never past the session's end (the next request then says so)."""
        time.sleep(max(0.0, min(t, self.ends) - time.time()))

    def send(self, key: int, role: str) -> Answer:
        address = self.address(key)
        name = f"{self.keys.prefix}{self.run}-{key}" if self.keys.header else address
        headers = {self.keys.header: name} if self.keys.header else {}
        return self.send_as(address, headers, name, role)

    def send_as(self, address: str, headers: dict[str, str], name: str, role: str, *,
                new_connection: bool = False) -> Answer:
        """One GET from ``address`` with ``headers``, logged as key ``name`` in ``role``; with
        ``new_connection``, on a connection of its own, closed after it (the address's own
        connection stays as it was, for the requests after)."""
        if len(self.before) + len(self.log) >= self.max_requests:
            raise CapReached.requests()
        self.sleep_until(self._last + 1.0 / self.max_rate)
        sent = time.time()
        self._last = sent
        if new_connection:
            client = self._new_client(address)
            try:
                response = self._get(client, headers, sent)
            finally:
                client.close()
        else:
            response = self._get(self._client(address), headers, sent)
        done = time.time()
        answer = Answer(name, sent, done, response.status_code, parse_limit_fields(response.headers.items(), done))
        self.log.append(Sent(answer, role, address))
        if self.on_sent is not None:
            self.on_sent(self.log[-1])
        self._refuse_failures(answer, response.headers.get("location"))
        if not answer.allowed and self.refusal_headers is None:
            self.refusal_headers = {k.lower(): v for k, v in response.headers.items()
                                    if k.lower() in REFUSAL_HEADERS or k.lower().startswith(("ratelimit", "x-ratelimit"))}
        return answer

    def _get(self, client: BoundedClient, headers: dict[str, str], sent: float) -> httpx.Response:
        """One GET within ``timeout_s`` in all, or within what is left of the session: a request
        that session's end cuts short ends the hunt (``CapReached``), one past its own bound is an error."""
        left = self.ends - sent
        if left <= 0:
            raise CapReached.time(self.max_time_s)
        n = len(self.log) + 1
        try:
            return client.get(self.url, headers, min(self.timeout_s, left))
        except httpx.TimeoutException:
            if left < self.timeout_s:
                raise CapReached.time(self.max_time_s) from None
            raise JudgeError(f"{self.url} timed out after {self.timeout_s:g} s (request {n}): no whole answer, status "
                             "line, headers and body, within --timeout") from None
        except BodyTooLong:
            raise JudgeError(f"{self.url}: the body of request {n} went past {BODY_CAP:,} bytes (an answer that "
                             "does not end): judge an endpoint whose answers end") from None
        except httpx.HTTPError as exc:
            raise JudgeError(f"{self.url}: {type(exc).__name__}: {exc} (request {n})") from None

    def _refuse_failures(self, answer: Answer, location: str | None) -> None:
        """An answer neither 2xx nor 429 leaves nothing to judge: said as what it is, counted."""
        status = answer.status
        if 200 <= status < 300 or status == 429:
            return
        n, to = len(self.log), f" to {location}" if location else ""
        statuses = Counter(s.answer.status for s in self.log)
        said = (f"every request answered {status}{to} ({n} of {n})" if statuses[status] == n else
                f"request {n} ({self.log[-1].role}) answered {status}{to} (the {n - 1} before it: "
                + ", ".join(f"{k} x{v}" for k, v in sorted(statuses.items()) if k != status) + ")")
        if status in NEEDS_KEY:
            raise JudgeError(f"{self.url}: {said}: nothing to judge; it needs a key the judge was not given (sent "
                             f"{answer.key!r}; --key header:NAME=PREFIX, and keys with that prefix accepted)")
        raise JudgeError(f"{self.url}: {said}: nothing to judge (a limiter answers 2xx or 429)")

    def _client(self, address: str) -> BoundedClient:
        """The address's own client: one connection kept alive for its requests, one after another."""
        if address not in self._clients:
            self._clients[address] = self._new_client(address)
        return self._clients[address]

    def _new_client(self, address: str) -> BoundedClient:
        # header keys are sent from 127.0.0.1 unbound, as before; every other address is bound
        bound = self.loopback and (self.keys.header is None or address != "127.0.0.1")
        return BoundedClient(address if bound else None)

    def close(self) -> None:
        for client in self._clients.values():
            client.close()


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback and ipaddress.ip_address(host).version == 4
    except ValueError:
        return host == "localhost"
