"""The slowapi peer's process: a FastAPI app limited by slowapi exactly as its users deploy it
(``Limiter(key_func, application_limits=[...], strategy=..., storage_uri=...)`` and slowapi's own
ASGI middleware and 429 handler), forwarding every admitted request to the run's downstream.

``python -m targets.peers.slowapi_app --config FILE`` (JSON, written by harness/live/peers/slowapi.py).
Nothing of the suite's limiter runs here: the only addition is a recorder around the ``limits``
strategy slowapi calls (``hit``), which appends one DECISION_SCHEMA row per decision to the
suite's decision log (targets/decision_log.py: flushed in parts, one file on SIGTERM). The
request's tags reach the recorder through a context variable set by an outer ASGI wrapper,
because ``hit`` only sees the limit and the key.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI, Request, Response
from slowapi import Limiter, _rate_limit_exceeded_handler
from slowapi.errors import RateLimitExceeded
from slowapi.middleware import SlowAPIASGIMiddleware

from targets.decision_log import DecisionLog

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "te", "upgrade", "date", "server"}
"""Not forwarded either way (uvicorn writes its own date and server)."""
KEEP_ALIVE_S = 300
_tags: ContextVar[tuple[float, dict[str, str], str]] = ContextVar("request_tags")
"""(when the request arrived, its benchmark headers, its route) for the decision being made."""


def suite_key(request: Request) -> str:
    """As the suite's targets key by default: the X-API-Key header, else the client address."""
    return request.headers.get("x-api-key") or (request.client.host if request.client else "127.0.0.1")


class RecordingStrategy:
    """The ``limits`` strategy slowapi calls, unchanged, with each ``hit`` written down."""

    def __init__(self, inner: Any, log: DecisionLog, config: dict[str, Any]) -> None:
        self.inner, self.log = inner, log
        self.algorithm, self.store = config["algorithm"], config["store"]
        self.after = self.store == "memory" or config["strategy"] != "moving-window"
        """The decision time is the clock limits reads: on memory, inside the hit after taking the
        key's lock (which its expiry thread may hold for milliseconds): the hit's end; on Redis,
        the moving window's timestamp, taken before the call; the other strategies run on Redis's
        own clock, in the script, which the hit's end approximates better (docs/peers.md)."""

    def hit(self, item: Any, *identifiers: str, cost: int = 1) -> bool:
        before, start = time.time(), time.perf_counter()
        allowed = self.inner.hit(item, *identifiers, cost=cost)
        decision_us = (time.perf_counter() - start) * 1e6
        t = time.time() if self.after else before
        arrived, headers, route = _tags.get((t, {}, ""))
        key = identifiers[-2]  # (key prefix, key, scope): slowapi's own order
        self.log.rows.append((
            round(t, 6), "node-1", self.algorithm, self.store, "per-client", key, float(cost), allowed, None, None,
            round(decision_us, 1), headers.get("x-client-class"), headers.get("x-request-id"),
            headers.get("x-client-id"), route, 0.0, None, "limits", None, round(arrived, 6)))
        return allowed

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class Tagged:
    """Outermost ASGI wrapper: the request's arrival time and benchmark tags, for the recorder."""

    TAGS = (b"x-request-id", b"x-client-id", b"x-client-class")

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {k.decode(): v.decode("latin-1") for k, v in scope["headers"] if k in self.TAGS}
            _tags.set((time.time(), headers, f"{scope['method']} {scope['path']}"))
        await self.app(scope, receive, send)


def build_app(config: dict[str, Any]) -> Any:
    log = DecisionLog(Path(config["decision_log"]))
    storage = os.environ["REDIS_URL"] if config["store"] == "redis" else "memory://"
    limiter = Limiter(key_func=suite_key, application_limits=[config["limit"]], strategy=config["strategy"],
                      storage_uri=storage, key_prefix=config["key_prefix"])
    limiter._limiter = RecordingStrategy(limiter._limiter, log, config)  # slowapi's own strategy, recorded
    downstream: dict[str, httpx.AsyncClient] = {}

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        log.start()
        downstream["client"] = httpx.AsyncClient(base_url=f"http://127.0.0.1:{config['downstream_port']}", timeout=30,
                                                 limits=httpx.Limits(max_keepalive_connections=32))
        try:
            yield
        finally:
            await downstream["client"].aclose()
            log.close()

    app = FastAPI(lifespan=lifespan)
    app.state.limiter = limiter
    app.add_exception_handler(RateLimitExceeded, _rate_limit_exceeded_handler)
    app.add_middleware(SlowAPIASGIMiddleware)

    async def forward(request: Request) -> Response:
        headers = {k: v for k, v in request.headers.items() if k not in HOP_BY_HOP}
        answer = await downstream["client"].request(request.method, request.url.path, params=request.query_params,
                                                    headers=headers, content=await request.body())
        return Response(answer.content, answer.status_code,
                        {k: v for k, v in answer.headers.items() if k not in HOP_BY_HOP})

    @limiter.exempt
    async def healthz(request: Request) -> Response:
        """Readiness, not limited: answers when the downstream does."""
        return await forward(request)

    # slowapi's middleware judges a request by the *last* route that matches it, Starlette serves
    # the first: /healthz after the catch-all is exempt (both forward it)
    app.add_api_route("/{path:path}", forward, methods=["GET", "POST", "PUT", "DELETE", "PATCH"])
    app.add_api_route("/healthz", healthz, methods=["GET"])
    return Tagged(app)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m targets.peers.slowapi_app", description=__doc__)
    parser.add_argument("--config", type=Path, required=True)
    config = json.loads(parser.parse_args(argv).config.read_text(encoding="utf-8"))
    # as the suite's targets serve (targets/__main__.py): keep-alive outlasts a run's idle gaps
    # (uvicorn's 5 s closed connections the load generator warmed before its first burst), and no
    # proxy headers (uvicorn would take the client address from X-Forwarded-For for any loopback
    # peer, and the load generator is one): keyed by the connection's address, like the suite's
    uvicorn.run(build_app(config), host="127.0.0.1", port=config["port"], log_level="warning", access_log=False,
                timeout_keep_alive=KEEP_ALIVE_S, proxy_headers=False)


if __name__ == "__main__":
    main()
