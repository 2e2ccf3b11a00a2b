"""The limiting middleware: pure ASGI (no BaseHTTPMiddleware: no extra task, no body
buffering), run before routing, so a rejected request costs a header scan, one decision and a
tiny 429 and never reaches a route or the downstream.

Per limited request: identities from headers (``keys``), the layered check (``limits``), one
decision-log row per layer that decided, metrics, then either the 429 or the route with the
quota headers added to its response. Queueing algorithms (leaky bucket in queue mode) are
honoured by sleeping ``delay_s`` before the route; concurrency-style limits release their slot
(and the adaptive limiter gets its latency sample) when the route has finished.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from .algorithms.base import decided_at
from .arrival import ARRIVED
from .config import AdmittedHeaders
from .decision_log import DecisionLog
from .headers import Header, QuotaText, limit_headers, never_admitted, quota_headers, rejection
from .keys import KeyPolicy, token
from .layers import NEVER_LIMITED, UNROUTED, Applied, RoutePlan, Verdict, check, check_remote, complete, complete_remote
from .metrics import Metrics

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_LOGIN_BODY = 4096
"""Login bodies are read (for the account) up to this size; larger ones count per IP only."""


class RateLimitMiddleware:
    def __init__(self, app: ASGIApp, *, routes: dict[tuple[str, str], RoutePlan], keys: KeyPolicy,
                 log: DecisionLog | None, metrics: Metrics, node: str, store: str,
                 admitted_headers: AdmittedHeaders = "full", process: int | None = None) -> None:
        self.app = app
        self.routes = routes
        self.keys = keys
        self.log = log
        self.metrics = metrics
        self.node = node
        self.store = store
        self._seq = itertools.count(1)
        self._id_prefix = node if process is None else f"{node}.p{process}"
        """Request ids the target makes up: a node's processes never make the same one."""
        self.admitted_headers = admitted_headers
        self.legacy_headers = admitted_headers == "full"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        plan = self.routes.get((scope.get("method"), scope.get("path"))) if scope["type"] == "http" else None
        if plan is None and scope["type"] == "http" and scope["path"] not in NEVER_LIMITED:
            plan = (self.routes.get(("GET", scope["path"])) if scope["method"] == "HEAD" else None) or self.routes.get(UNROUTED)
        if plan is None or not plan.layers:
            await self.app(scope, receive, send)
            return
        who = self.keys.identify(scope)
        unreadable = False
        if plan.needs_account:
            who.account, unreadable, receive = await _read_account(receive)
        # the whole µs the algorithms decide at, so the log's over-admission is measured on them
        if plan.remote:
            verdict = await check_remote(plan, who)
            now = decided_at(time.time())  # logged at the decision, not the arrival: the order Redis decided in
        else:
            now = decided_at(time.time())
            verdict = check(plan, who, now)
        self._record(plan, who, verdict, now, scope.get(ARRIVED))
        if not verdict.allowed:
            a = verdict.applied[0]
            # a cost this limit can never admit: waiting will not help (a fallback store's smaller local
            # share while Redis is away is not that: its request is admitted once Redis is back)
            if a.decision[2] == math.inf and plan.cost > a.variant.max_cost:
                headers, body = never_admitted(a.layer.name, plan.cost, a.variant.max_cost, _text(a))
            else:
                headers, body = rejection(a.layer.name, a.decision, _fields(verdict))
            await send({"type": "http.response.start", "status": 429, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        applied = verdict.applied
        delay = applied[0].decision[4] if len(applied) == 1 else max((a.decision[4] for a in applied), default=0.0)
        if delay > 0:
            await asyncio.sleep(delay)
        fields = _fields(verdict, self.legacy_headers) if self.admitted_headers != "none" else None
        if fields:
            send = _adding(send, fields)
        app = _unreadable_body if unreadable else self.app
        if not plan.holds:
            await app(scope, receive, send)
            return
        status = _Status(send)
        start = time.perf_counter()
        try:
            await app(scope, receive, status.send)
        finally:
            failed = status.code == 503
            if plan.remote:
                await complete_remote(verdict, plan.cost, time.perf_counter() - start, failed)
            else:
                complete(verdict, plan.cost, time.perf_counter() - start, failed)

    def _record(self, plan: RoutePlan, who: Any, verdict: Verdict, now: float, arrived: float | None) -> None:
        rows = self.log.rows if self.log is not None else None
        request_id = who.request_id or f"{self._id_prefix}-{next(self._seq)}"
        for a in verdict.applied:
            d = a.decision
            name = a.layer.name
            self.metrics.decided[name].inc()
            if not d[0]:
                self.metrics.rejected[name].inc()
            source = a.variant.source_of(d)
            if a.variant.remote:
                self.metrics.sourced[name, source].inc()
            if rows is not None:
                rows.append((now, self.node, a.layer.algorithm.name, self.store, name, a.key, plan.cost, d[0], d[1],
                             d[2], a.decision_us, who.client_class, request_id, who.client_id, plan.name, d[4], None,
                             source, a.layer.current_limit if a.layer.observes else None, arrived))


def _text(a: Applied) -> QuotaText:
    """A limit's quota text; an adaptive limit's quota is its current limit."""
    return a.variant.text.at(a.layer.current_limit) if a.layer.observes else a.variant.text


def _fields(verdict: Verdict, legacy: bool = True) -> list[Header]:
    """Quota headers for the limits with a finite quota (``none`` has none). ``legacy``: with
    the X-RateLimit trio."""
    if len(verdict.applied) == 1:  # one limit, the common case: no lists to build
        a = verdict.applied[0]
        if a.decision[1] == math.inf:
            return []
        return limit_headers(_text(a), a.decision, legacy)
    applied = [(_text(a), a.decision) for a in verdict.applied if a.decision[1] < math.inf]
    if not applied:
        return []
    binding = min(range(len(applied)), key=lambda i: applied[i][1][1])
    return quota_headers(applied, binding, legacy)


class _Status:
    """Remembers the response status on its way out: a 503 is a failed sample for the rules that
    skip them (go-zero's shedding handler)."""

    __slots__ = ("_send", "code")

    def __init__(self, send: Send) -> None:
        self.code = 0
        self._send = send

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.code = message["status"]
        await self._send(message)


def _adding(send: Send, extra: list[Header]) -> Send:
    async def send_with(message: Message) -> None:
        if message["type"] == "http.response.start":
            message["headers"] = [*message.get("headers", ()), *extra]
        await send(message)

    return send_with


async def _read_account(receive: Receive) -> tuple[str | None, bool, Receive]:
    """The account a login names (JSON ``{"username": ...}``), whether the body was unreadable,
    and a ``receive`` that replays the body for the route. A body that is not JSON (or nests
    deeper than the parser goes: RecursionError) is unreadable: it names no account, is limited
    by the limits keyed without one, and is answered 400. Oversized bodies are not read at all
    (no account, the route as usual); a readable body without a usable username names none."""
    messages: list[Message] = []
    size, more = 0, True
    while more and size <= MAX_LOGIN_BODY:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            break
        size += len(message.get("body", b""))
        more = message.get("more_body", False)
    account, unreadable = None, False
    if not more and size <= MAX_LOGIN_BODY:
        try:
            data = json.loads(b"".join(m.get("body", b"") for m in messages))
        except (ValueError, RecursionError):  # ValueError includes JSON and Unicode decoding errors
            unreadable = True
        else:
            name = data.get("username") if isinstance(data, dict) else None
            account = token(name.encode("utf-8", "surrogatepass")) if isinstance(name, str) else None
    pending = iter(messages)

    async def replay() -> Message:
        message = next(pending, None)
        return message if message is not None else await receive()

    return account, unreadable, replay


_BAD_BODY = json.dumps({"type": "about:blank", "title": "Bad Request", "status": 400,
                        "detail": "the login body is not readable JSON"}, separators=(",", ":")).encode()


async def _unreadable_body(scope: Scope, receive: Receive, send: Send) -> None:
    """The answer to a login whose body could not be read (after the limits that apply to it)."""
    await send({"type": "http.response.start", "status": 400, "headers": [
        (b"content-type", b"application/problem+json"), (b"content-length", b"%d" % len(_BAD_BODY))]})
    await send({"type": "http.response.body", "body": _BAD_BODY})
