"""Idempotency-Key on POSTs: a retried POST is executed once, later copies get the stored answer.

Pure ASGI, inside the limiter (each retry is still a call the limiter counts) and in front of
the routes (a replay does no downstream work). A key's first request runs; its response, unless
5xx or abandoned (499: the client went away and its work was cancelled), is kept and replayed
with ``Idempotent-Replayed: true``, so a failed or abandoned request runs again when retried; a
copy arriving while the first still runs gets 409 (draft-ietf-httpapi-idempotency-key-header).

A key belongs to one client (the limiter's client key: API key > user > IP) and one route: Bob
sending Alice's key runs his own request, as does Alice reusing a key on another route.
Memory is bounded by entries and by bytes (keys, headers and bodies kept, plus an estimate of
each entry's Python objects): the oldest keys are forgotten first, so a flood of long keys
cannot grow the process.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from .downstream import GONE
from .keys import KeyPolicy

Message = MutableMapping[str, Any]
ASGIApp = Callable[[MutableMapping[str, Any], Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]],
                   Awaitable[None]]

HEADER = b"idempotency-key"
MAX_KEY_BYTES = 255
MAX_KEYS = 100_000
MAX_BYTES = 16 * 1024 * 1024
ENTRY_OVERHEAD = 800
"""Bytes an entry costs beyond what it holds (dicts, lists, tuples): measured with tracemalloc,
20,000 entries with 200-byte keys took 1,063 bytes each."""
CONFLICT = b'{"title":"Conflict","status":409,"detail":"a request with this Idempotency-Key is in progress"}'


class IdempotencyMiddleware:
    def __init__(self, app: ASGIApp, keys: KeyPolicy, max_keys: int = MAX_KEYS, max_bytes: int = MAX_BYTES) -> None:
        self.app = app
        self.keys = keys
        self.max_keys = max_keys
        self.max_bytes = max_bytes
        self.seen: OrderedDict[bytes, list[Any]] = OrderedDict()
        """scoped key -> [the response messages, or None while the first request runs; its size]."""
        self.bytes = 0
        """What the entries hold, by ``_size``."""

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        raw = _key(scope) if scope["type"] == "http" and scope.get("method") == "POST" else None
        if raw is None:
            await self.app(scope, receive, send)
            return
        key = b"%s\0%s\0%s" % (self.keys.identify(scope).client.encode(), scope["path"].encode(), raw)
        if key in self.seen:
            stored = self.seen[key][0]
            if stored is None:
                await _answer(send, 409, [(b"content-type", b"application/problem+json")], CONFLICT)
            else:
                for message in stored:
                    await send(dict(message))  # outer layers may rewrite what they are sent
            return
        self._put(key, None)
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
            if status >= 500 or status == GONE or not messages or messages[-1].get("more_body", False):
                self._drop(key)  # failed, abandoned or cut off: the client may try again
            elif key in self.seen:
                self._put(key, messages)

    def _put(self, key: bytes, messages: list[Message] | None) -> None:
        """Store (or replace) an entry, then forget the oldest until both bounds hold."""
        self._drop(key)
        size = _size(key, messages)
        self.seen[key] = [messages, size]
        self.bytes += size
        while len(self.seen) > self.max_keys or self.bytes > self.max_bytes:
            _, (_, dropped) = self.seen.popitem(last=False)
            self.bytes -= dropped

    def _drop(self, key: bytes) -> None:
        entry = self.seen.pop(key, None)
        if entry is not None:
            self.bytes -= entry[1]


def _size(key: bytes, messages: list[Message] | None) -> int:
    held = sum(len(m.get("body", b"")) + sum(len(n) + len(v) for n, v in m.get("headers", ())) for m in messages or ())
    return ENTRY_OVERHEAD + len(key) + held


def _key(scope: MutableMapping[str, Any]) -> bytes | None:
    for name, value in scope["headers"]:
        if name == HEADER:
            return value if 0 < len(value) <= MAX_KEY_BYTES else None
    return None


async def _answer(send: Any, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [*headers, (b"content-length", b"%d" % len(body))]})
    await send({"type": "http.response.body", "body": body})
