"""Requests decided by the HTTP protocol as soon as their head is parsed, and refusals answered
there, before uvicorn's request cycle exists.

Why: decided in the ASGI middleware, a refusal cost 0.51 of an admitted request's target CPU over
HTTP, though the decision and the 429 alone cost 0.22 in-process; the rest was uvicorn's
per-request cycle, paid by every request however it is answered: a ``RequestResponseCycle`` and
its ``asyncio.Event``, a task, the ASGI app chain, two ``send`` calls that check every header.
Here, in ``on_headers_complete``: the request's plan and key by the target's own code
(``Decider``; a request naming its key twice gets the middleware's 400, ``bad_request``), the
decision and its decision-log row, then for a refusal the bytes uvicorn's ``send`` would write
(its status line and default headers, the 429's headers, ``connection: close`` when the request
does not keep its connection, the body unless HEAD) straight to the transport. An admitted
request goes on through uvicorn with its decision in the scope (``DECIDED``): decided once.

A request is decided here only when its answer can be written now, in order, and its decision
waits for nothing; otherwise the middleware decides it, as before:

- memory layers only: a Redis layer is a round trip, which the protocol would have to await in a
  task (what this path saves) while holding the connection's later requests in order (what
  uvicorn's cycle does); a login's account is read from its body, which is not there yet;
- no answer pending on the connection: a pipelined request waits its turn in uvicorn's queue;
- the transport not closing and not pushing back (its buffer above the high-water mark, where
  uvicorn's ``send`` waits for a drain): a client that never reads cannot pile refusals up here;
- not an upgrade request (answered as plain HTTP, then closed: targets/http_protocol.py).

A refused request's body is read by the parser and dropped, as uvicorn drops the body of a request
it has answered; the connection then goes on, or closes as the request asked.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Sequence
from typing import ClassVar

import httptools
from uvicorn.protocols.http.httptools_impl import STATUS_LINE

from .decider import DECIDED, Decider, bad_request, early, refusal
from .headers import Header
from .http_protocol import HardenedHttpToolsProtocol

_CLOSE = b"connection: close\r\n"


class RefusingHttpToolsProtocol(HardenedHttpToolsProtocol):
    """Serve with ``RefusingHttpToolsProtocol.bounded(..., decider=..., admin_port=...)``."""

    decider: ClassVar[Decider | None] = None
    """None: the middleware decides every request (``python -m targets --decide-in app``)."""
    admin_port: ClassVar[int | None] = None
    """Its connections reach the admin app, which nothing limits."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._decider: Decider | None = None
        self._refused = False
        """The request being read was answered here: its body is dropped."""

    def connection_made(self, transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        admin = self.server is not None and self.server[1] == self.admin_port
        self._decider = None if admin else self.decider

    def on_message_begin(self) -> None:
        self._unset_keepalive_if_required()  # armed by a refusal answered earlier in this same read
        super().on_message_begin()

    def on_headers_complete(self) -> None:
        decider = self._decider
        if decider is None or not self._answerable():
            super().on_headers_complete()
            return
        method = self.parser.get_method().decode("ascii")
        plan = decider.plan(method, request_path(self.url))
        if plan is None or not early(plan):
            super().on_headers_complete()
            return
        who = decider.keys.identify(self.scope)
        bad = bad_request(who)
        if bad is not None:
            self._answer_now(400, *bad, method)
            return
        verdict = decider.decide(plan, who, self.scope)
        if verdict.allowed:
            self.scope[DECIDED] = (plan, verdict)  # type: ignore[literal-required]
            super().on_headers_complete()
            return
        self._answer_now(429, *refusal(plan, verdict), method)

    def _answer_now(self, status: int, headers: Sequence[Header], body: bytes, method: str) -> None:
        """The request is answered here, its body dropped; the connection goes on or closes as
        the request asked."""
        self._head_read()
        self._refused = True
        keep_alive = self.parser.get_http_version() != "1.0" and self.parser.should_keep_alive()
        self.transport.write(answer(status, self.server_state.default_headers, headers,
                                    b"" if method == "HEAD" else body, keep_alive))
        self.server_state.total_requests += 1
        if not keep_alive:
            self.transport.close()
        else:  # as uvicorn does once an answer is complete
            self.timeout_keep_alive_task = self.loop.call_later(self.timeout_keep_alive, self.timeout_keep_alive_handler)

    def on_body(self, body: bytes) -> None:
        if not self._refused:
            super().on_body(body)

    def on_message_complete(self) -> None:
        if self._refused:
            self._refused = self._in_body = False
            return
        super().on_message_complete()

    def _answerable(self) -> bool:
        """Whether an answer written now is this connection's next, and may be written."""
        cycle = self.cycle
        return ((cycle is None or cycle.response_complete) and not self.pipeline and not self.flow.write_paused
                and not self.transport.is_closing() and not self.parser.should_upgrade())


def request_path(url: bytes) -> str:
    """The path uvicorn puts in the scope (a target serves at the root: no ``root_path``)."""
    path = httptools.parse_url(url).path.decode("ascii")
    return urllib.parse.unquote(path) if "%" in path else path


def answer(status: int, default_headers: Sequence[Header], headers: Sequence[Header], body: bytes,
           keep_alive: bool) -> bytes:
    """An answer (429, or 400) as uvicorn's ``send`` writes it: status line, its default headers
    (date, server), then the answer's, ``connection: close`` if the connection ends with it, the body."""
    out = [STATUS_LINE[status]]
    for name, value in default_headers:
        out += (name, b": ", value, b"\r\n")
    for name, value in headers:
        out += (name, b": ", value, b"\r\n")
    if not keep_alive:
        out.append(_CLOSE)
    out += (b"\r\n", body)
    return b"".join(out)
