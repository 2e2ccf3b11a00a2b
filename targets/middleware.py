"""The limiting middleware: pure ASGI (no BaseHTTPMiddleware: no extra task, no body
buffering), run before routing, so a rejected request costs a header scan, one decision and a
tiny 429 and never reaches a route or the downstream.

Most requests on the memory store arrive decided: the HTTP protocol decided and logged them as
their head was parsed (targets/early_refusal.py) and answered the refusals itself, so only the
admitted reach here (``DECIDED`` in the scope). The rest are decided here, with the same
``Decider``: identities from headers (``keys``), the layered check (``limits``), one
decision-log row per layer that decided, metrics, then either the 429 or the route with the
quota headers added to its response. Queueing algorithms (leaky bucket in queue mode) are
honoured by sleeping ``delay_s`` before the route; concurrency-style limits release their slot
(and the adaptive limiter gets its latency sample) when the route has finished.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from .algorithms.base import decided_at
from .arrival import ARRIVED
from .config import AdmittedHeaders
from .decider import DECIDED, Decider, bad_request, quota_fields, refusal
from .headers import Header
from .keys import token
from .layers import RoutePlan, Verdict, check, check_remote, complete, complete_remote

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_LOGIN_BODY = 4096
"""Login bodies are read (for the account) up to this size; larger ones count per IP only."""


class RateLimitMiddleware:
    def __init__(self, app: ASGIApp, *, decider: Decider, admitted_headers: AdmittedHeaders = "full") -> None:
        self.app = app
        self.decider = decider
        self.admitted_headers = admitted_headers
        self.legacy_headers = admitted_headers == "full"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        decided = scope.get(DECIDED)
        if decided is not None:
            await self._admitted(*decided, False, scope, receive, send)
            return
        plan = self.decider.plan(scope["method"], scope["path"]) if scope["type"] == "http" else None
        if plan is None:
            await self.app(scope, receive, send)
            return
        who = self.decider.keys.identify(scope)
        bad = bad_request(who)
        if bad is not None:
            await send({"type": "http.response.start", "status": 400, "headers": list(bad[0])})
            await send({"type": "http.response.body", "body": bad[1]})
            return
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
        self.decider.record(plan, who, verdict, now, scope.get(ARRIVED))
        if not verdict.allowed:
            headers, body = refusal(plan, verdict)
            await send({"type": "http.response.start", "status": 429, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await self._admitted(plan, verdict, unreadable, scope, receive, send)

    async def _admitted(self, plan: RoutePlan, verdict: Verdict, unreadable: bool, scope: Scope, receive: Receive,
                        send: Send) -> None:
        """The route, after a queueing limit's delay, with the quota headers on its answer; a
        holding limit's slot given back (and its latency sampled) when it has finished."""
        applied = verdict.applied
        delay = applied[0].decision[4] if len(applied) == 1 else max((a.decision[4] for a in applied), default=0.0)
        if delay > 0:
            await asyncio.sleep(delay)
        fields = quota_fields(verdict, self.legacy_headers) if self.admitted_headers != "none" else None
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
