"""uvicorn's Server, which accepts with ``DrainingListener`` (targets/accept.py: every pending
connection on each wake, not one per loop iteration), moves every object alive once it has
started out of the garbage collector's reach (``gc.freeze``), and hands the GIL to the event loop
within ``SWITCH_S``.

What exists by then (FastAPI, pydantic, pyarrow, the app and the middleware stack Starlette
builds at the lifespan call) lives as long as the process. Left in the collector's oldest
generation, the first full collection walks all of it: 48 ms measured here, a stall that lands on
the first burst a target serves (docs/campaigns.md, Benchmark). Frozen, it is never walked again.

The decision log's flusher thread converts a second of rows to Arrow while the event loop may
be serving a burst; Python makes a waiting thread wait up to its switch interval (5 ms by
default) before the one holding the GIL must let go. Pinned on its own core, a 1,000-request
burst that met a flush landed over ~100 ms instead of 22-36 ms.
"""

from __future__ import annotations

import functools
import gc
import socket
import sys

import uvicorn

from .accept import DrainingListener

SWITCH_S = 0.0005


class FrozenAfterStartup(uvicorn.Server):
    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup([])  # the lifespan; the listeners are ours
        if sockets is None:
            raise ValueError("a target serves on sockets bound before it starts")
        config = self.config
        factory = functools.partial(config.http_protocol_class, config=config, server_state=self.server_state,
                                    app_state=self.lifespan.state)
        caps = config.http_protocol_class.caps  # type: ignore[union-attr]  # the protocol's: one count per process
        self.servers = [DrainingListener(sock, factory, config.backlog, caps) for sock in sockets]  # type: ignore[misc]
        gc.collect()
        gc.freeze()
        sys.setswitchinterval(SWITCH_S)
