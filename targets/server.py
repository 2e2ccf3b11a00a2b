"""uvicorn's Server, which moves every object alive once it has started out of the garbage
collector's reach (``gc.freeze``).

What exists by then (FastAPI, pydantic, pyarrow, the app and the middleware stack Starlette
builds at the lifespan call) lives as long as the process. Left in the collector's oldest
generation, the first full collection walks all of it: 48 ms measured here, a stall that lands on
the first burst a target serves (docs/campaigns.md, Benchmark). Frozen, it is never walked again.
"""

from __future__ import annotations

import gc
import socket

import uvicorn


class FrozenAfterStartup(uvicorn.Server):
    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        gc.collect()
        gc.freeze()
