"""When a request reached the target, apart from when it was decided.

uvicorn's httptools protocol is subclassed to stamp the wall-clock time at which a request's
first bytes were parsed (``on_message_begin``, inside ``data_received``), before the request
waits its turn on the event loop. One uvicorn process decides a burst's requests one after the
other, so the decision times of a 100-request burst spread over 100 x the per-request work; the
arrival stamps show how tightly the burst actually landed. uvicorn takes a protocol class for
``http=``; nothing else of it is changed.
"""

from __future__ import annotations

import time

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

ARRIVED = "ratelimit_bench.arrived_t"
"""The scope key (an ASGI extension key of this project) holding the arrival time, epoch seconds."""


class StampingHttpToolsProtocol(HttpToolsProtocol):
    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.scope[ARRIVED] = time.time()  # type: ignore[literal-required]
