"""The HTTP/1.1 protocol a target serves with: uvicorn's httptools protocol (with the arrival
stamp) plus the bounds a hostile client calls for, which neither httptools nor uvicorn has
(targets/early_refusal.py subclasses it to decide requests as their head is parsed).

Why this part is hand-written: httptools (llhttp) buffers a header of any size, joining its
pieces by bytes concatenation (one 64 MB header held the only event loop for 4.9 s); uvicorn's
httptools protocol has no bound on the head and no head timeout (its keep-alive timer is
disarmed by a head's first byte and re-armed only after a response); its h11 protocol bounds the
head (``h11_max_incomplete_event_size``) but has no head timeout either, answers 400 rather than
431, and costs more per request. So, per connection:

- the request head (request line and headers) is bounded: past ``max_head_bytes`` the parser is
  fed nothing more, the client gets 431 and the connection is closed (``SLICE_BYTES`` says how
  exactly a pipelined head is counted);
- a head not complete ``head_timeout_s`` after its first byte gets 408 and the close (slowloris);
- a new connection that sends nothing is closed after the keep-alive timeout, like an idle
  keep-alive one (uvicorn arms that timer only after a first response);
- an error is answered in order: a malformed request (400), an oversized head (431) or a late
  one (408) is written after the answers of the complete requests before it on the connection
  (uvicorn writes its 400 at once and closes, so a pipelined request that had been decided and
  charged got no answer);
- after an error the connection closes gracefully: the answer, then our FIN, then whatever the
  client still sends is read and dropped for at most ``LINGER_S`` and ``LINGER_BYTES`` (closing with unread data
  makes the kernel send a reset, which can destroy the answer before the client reads it);
- a connection counts in the process's caps (``connection_caps``, decided at the accept:
  targets/accept.py) until it closes;
- nothing is logged per bad request (a client could otherwise write a log line per packet), and
  upgrade requests (WebSocket, CONNECT) are answered as plain HTTP, then the connection closes.
"""

from __future__ import annotations

from asyncio import TimerHandle
from typing import Any, ClassVar

import httptools

from .arrival import StampingHttpToolsProtocol
from .connection_caps import ConnectionCaps

SLICE_BYTES = 8 * 1024
"""Longer reads are fed to the parser in slices of this size. Where a head ends and the next
begins inside one slice is not known (httptools reports no offsets), so a head that begins in
the slice where the request before it ended is counted from the next slice on: it may exceed
the bound by up to one slice. The first head of a connection is counted exactly."""
LINGER_S = 2.0
LINGER_BYTES = 64 * 1024
"""After an error answer, for how long and up to how many bytes the client's further bytes are
read and dropped before the close."""

_REASONS = {400: b"Bad Request", 408: b"Request Timeout", 431: b"Request Header Fields Too Large"}


class HardenedHttpToolsProtocol(StampingHttpToolsProtocol):
    """Serve with ``HardenedHttpToolsProtocol.bounded(...)``: the bounds are class attributes."""

    max_head_bytes: ClassVar[int]
    head_timeout_s: ClassVar[float]
    caps: ClassVar[ConnectionCaps]

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._in_head = False
        """Between on_message_begin and on_headers_complete."""
        self._in_body = False
        """Between on_headers_complete and on_message_complete."""
        self._head_bytes = 0
        self._head_timer: TimerHandle | None = None
        self._failure: tuple[int, bytes] | None = None
        """The error answer owed once the requests before it are answered."""
        self._discard = False
        """Read nothing more (after an error, or an upgrade request)."""
        self._dropped = 0
        self._lingering = False
        """The error answer is written; what the client still sends is dropped until the close."""
        self._counted: str | None = None
        """The client address this connection is counted under (admitted at the accept)."""

    @classmethod
    def bounded(cls, max_head_bytes: int, head_timeout_s: float, caps: ConnectionCaps,
                **more: Any) -> type[HardenedHttpToolsProtocol]:
        """The protocol class with these bounds and the caps its connections count in (uvicorn
        takes a class for ``http=``); ``more``: a subclass's own class attributes."""
        return type(cls.__name__, (cls,), {"max_head_bytes": max_head_bytes, "head_timeout_s": head_timeout_s,
                                           "caps": caps, **more})

    # asyncio.Protocol

    def connection_made(self, transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._counted = self.client[0] if self.client else ""
        self.timeout_keep_alive_task = self.loop.call_later(self.timeout_keep_alive, self.timeout_keep_alive_handler)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._counted is not None:
            self.caps.release(self._counted)
            self._counted = None
        self._cancel_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._discard or self.parser is None:
            self._dropped += len(data)
            if self._lingering and self._dropped > LINGER_BYTES and not self.transport.is_closing():
                self.transport.close()  # lingering is a courtesy, not a sink for a flood
            return
        self._unset_keepalive_if_required()
        n = len(data)
        if n <= SLICE_BYTES and (self._in_body or self._head_bytes + n <= self.max_head_bytes):
            # the common case (a whole request, or a piece within the bound) costs no extra call
            if not self._in_body:
                self._head_bytes += n
            self._feed(data)
        else:
            self._receive(data)
        if not self._in_body and not self._discard and (self._in_head or self._head_bytes) and self._head_timer is None:
            self._head_timer = self.loop.call_later(self.head_timeout_s, self._head_timed_out)

    def _receive(self, data: bytes) -> None:
        if len(data) <= SLICE_BYTES:
            self._receive_slice(data)
            return
        view = memoryview(data)
        for start in range(0, len(data), SLICE_BYTES):
            if self._discard:
                return
            self._receive_slice(view[start:start + SLICE_BYTES])

    def _receive_slice(self, data: bytes | memoryview) -> None:
        if self._in_body:
            self._feed(data)
            return
        room = self.max_head_bytes - self._head_bytes
        if len(data) <= room:
            self._head_bytes += len(data)
            self._feed(data)
            return
        self._head_bytes = self.max_head_bytes
        self._feed(data[:room])
        if self._discard:
            return
        if self._head_bytes >= self.max_head_bytes:  # not reset: the head is still incomplete
            self._fail(431, b"Request head larger than %d bytes." % self.max_head_bytes)
        else:
            self._receive_slice(data[room:])

    def _feed(self, data: bytes | memoryview) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._refuse_upgrade()
        except httptools.HttpParserError:
            self._fail(400, b"Invalid HTTP request received.")

    # parser callbacks

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head = True

    def on_headers_complete(self) -> None:
        self._head_read()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._in_body = False
        super().on_message_complete()

    def _head_read(self) -> None:
        """A head is whole: its bounds no longer apply, its body's (if any) begins."""
        self._in_head, self._in_body, self._head_bytes = False, True, 0
        self._cancel_head_timer()

    # errors, in order

    def _refuse_upgrade(self) -> None:
        """No protocol switch is offered: the request is answered as plain HTTP (whatever follows
        its head belongs to the other protocol and is dropped), then the connection closes."""
        self._discard = True
        self.flow.pause_reading()
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            cycle.keep_alive, cycle.more_body = False, False
            cycle.message_event.set()
        else:
            self.transport.close()

    def _fail(self, status: int, detail: bytes) -> None:
        self._discard = True
        self._failure = (status, detail)
        self._cancel_head_timer()
        self.flow.pause_reading()
        cycle = self.cycle
        # answers still owed before the error: the queued requests, or the one being served
        owed = bool(self.pipeline) or (cycle is not None and not cycle.response_complete)
        if cycle is not None and not cycle.response_complete and cycle.more_body:
            # the request whose body was being read is the broken one: the error is its answer
            if self.pipeline and self.pipeline[0][0] is cycle:
                self.pipeline.popleft()  # queued, never started (so never decided); an earlier one is still served
            elif cycle.response_started:  # half an answer written: nothing can follow it
                self.transport.close()
                return
            else:  # being served: to the app its client has gone
                cycle.disconnected = True
                cycle.message_event.set()
                owed = False
        if not owed:
            self._send_failure()

    def on_response_complete(self) -> None:
        if self._failure is None:
            super().on_response_complete()
            return
        if self.pipeline:
            super().on_response_complete()  # the next queued request is served
            self.flow.pause_reading()  # which uvicorn undid: nothing more is read before the error answer
            return
        self.server_state.total_requests += 1
        self._send_failure()

    def _send_failure(self) -> None:
        assert self._failure is not None
        status, detail = self._failure
        transport = self.transport
        if transport.is_closing():
            return
        head = [b"HTTP/1.1 %d %s\r\n" % (status, _REASONS[status])]
        head += [name + b": " + value + b"\r\n" for name, value in self.server_state.default_headers]
        head.append(b"content-type: text/plain; charset=utf-8\r\ncontent-length: %d\r\nconnection: close\r\n\r\n" % len(detail))
        transport.write(b"".join(head) + detail)
        if transport.can_write_eof():
            transport.write_eof()
            self._lingering, self._dropped = True, 0
            self.flow.resume_reading()  # read and drop what the client still sends, then close
            self.loop.call_later(LINGER_S, transport.close)
        else:
            transport.close()

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if not self._discard and not self._in_body:
            self._fail(408, b"Request head not received in time.")

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
