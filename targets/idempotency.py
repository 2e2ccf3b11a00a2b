"""Idempotency-Key on POSTs: a retried POST is executed once, later copies get the stored answer.

Pure ASGI, inside the limiter (each retry is still a call the limiter counts) and in front of
the routes (a replay does no downstream work). A key's first request runs; its response, unless
5xx (the client may try again), is kept and replayed with ``Idempotent-Replayed: true``; a copy
arriving while the first still runs gets 409 (draft-ietf-httpapi-idempotency-key-header).
Memory is bounded: the oldest keys are forgotten first.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Message = MutableMapping[str, Any]
ASGIApp = Callable[[MutableMapping[str, Any], Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]],
                   Awaitable[None]]

HEADER = b"idempotency-key"
MAX_KEY_BYTES = 255
CONFLICT = b'{"title":"Conflict","status":409,"detail":"a request with this Idempotency-Key is in progress"}'


class IdempotencyMiddleware:
    def __init__(self, app: ASGIApp, max_keys: int = 100_000) -> None:
        self.app = app
        self.max_keys = max_keys
        self.seen: OrderedDict[bytes, list[Message] | None] = OrderedDict()
        """key -> the response messages, or None while the first request runs."""

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        key = _key(scope) if scope["type"] == "http" and scope.get("method") == "POST" else None
        if key is None:
            await self.app(scope, receive, send)
            return
        if key in self.seen:
            stored = self.seen[key]
            if stored is None:
                await _answer(send, 409, [(b"content-type", b"application/problem+json")], CONFLICT)
            else:
                for message in stored:
                    await send(dict(message))  # outer layers may rewrite what they are sent
            return
        self.seen[key] = None
        while len(self.seen) > self.max_keys:
            self.seen.popitem(last=False)
        messages: list[Message] = []

        async def keep(message: Message) -> None:
            if message["type"] == "http.response.start":
                messages.append({**message, "headers": [*message.get("headers", ()), (b"idempotent-replayed", b"true")]})
            elif message["type"] == "http.response.body":
                messages.append(dict(message))
            await send(message)

        try:
            await self.app(scope, receive, keep)
        finally:
            status = messages[0]["status"] if messages else 500
            if status >= 500 or not messages or messages[-1].get("more_body", False):
                self.seen.pop(key, None)  # failed or cut off: the client may try again
            elif key in self.seen:
                self.seen[key] = messages


def _key(scope: MutableMapping[str, Any]) -> bytes | None:
    for name, value in scope["headers"]:
        if name == HEADER:
            return value if 0 < len(value) <= MAX_KEY_BYTES else None
    return None


async def _answer(send: Any, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [*headers, (b"content-length", b"%d" % len(body))]})
    await send({"type": "http.response.body", "body": body})
