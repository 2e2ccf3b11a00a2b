"""The target app factory: one FastAPI app from a ``TargetConfig`` (algorithm, params, store,
key policy, layered limits, route costs, downstream).

Routes: those of the one catalogue, ``contract.routes`` (``GET /api/items``, ``GET /api/search``,
``POST /api/reports``, ``POST /login``; each one downstream call), ``GET /healthz`` (never
limited). ``GET /metrics`` (Prometheus) and the admin endpoints under ``/_bench/`` (counters, any
key's limiter state, health override) are a second app (``app.state.admin``) that only the admin
listener serves (``by_listener``): no API client can read another's quota, the limits' counts or
stall the downstream through them.

A route whose client goes away while it waits for the downstream stops waiting and frees its
slot: otherwise clients that give up would keep every slot taken until their work ended.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import asdict, dataclass
from typing import Any

from fastapi import APIRouter, FastAPI, HTTPException, Query, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import BaseModel, ConfigDict, model_validator

from contract.routes import CATALOGUE

from .config import Factor, OverrideHealth, TargetConfig
from .decider import Decider
from .decision_log import DecisionLog
from .downstream import GONE, Downstream
from .idempotency import IdempotencyMiddleware
from .keys import KeyPolicy
from .layers import Layer, build_layers, remote_stores
from .metrics import Metrics
from .middleware import RateLimitMiddleware
from .readings import sampling
from .siblings import Siblings, merge_counters

JSON = "application/json"
ASGIApp = Callable[[MutableMapping[str, Any], Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]


@dataclass
class Target:
    """What the admin endpoints and tests reach through ``app.state.target``."""

    config: TargetConfig
    layers: list[Layer]
    downstream: Downstream
    metrics: Metrics
    log: DecisionLog | None
    decider: Decider
    """Shared by the middleware and the HTTP protocol (which decides memory-store requests as
    their head is parsed): one sequence of request ids, one log."""

    def layer(self, name: str) -> Layer:
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise KeyError(name)


class HealthUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    health: OverrideHealth | None
    """None: back to the configured schedule."""
    factor: Factor = 1.0

    @model_validator(mode="after")
    def _factor_only_when_degraded(self) -> HealthUpdate:
        if self.factor != 1.0 and self.health != "degraded":
            raise ValueError(f"factor applies to health 'degraded' only, not {self.health!r}")
        return self


def _lifespan(layers: list[Layer], log: DecisionLog | None) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """While the target serves: the decision log's writer and the CPU sampler; at the end the
    Redis stores closed and every buffered row written."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if log is not None:
            log.start()
        try:
            async with sampling(layers):
                yield
        finally:
            for _, store in remote_stores(layers):
                await store.aclose()
            if log is not None:
                log.close()  # uvicorn runs this on SIGTERM: every buffered row reaches the file

    return lifespan


def create_app(config: TargetConfig, process: int | None = None, siblings: list[str] | None = None) -> FastAPI:
    """``process``: this process's index in a node of several (targets/multiprocess.py);
    ``siblings``: process 0's view of the others' admin URLs (``targets.siblings``)."""
    layers, routes = build_layers(config)
    downstream = Downstream(config.downstream, config.schedule_start())
    log = DecisionLog(config.decision_log.path, config.decision_log.flush_every_s) if config.decision_log.path else None
    metrics = Metrics(layers, downstream)
    decider = Decider(routes, KeyPolicy(config.keys), log, metrics, config.node, config.store.name, process)
    target = Target(config, layers, downstream, metrics, log, decider)
    app = FastAPI(lifespan=_lifespan(layers, log), openapi_url=None, docs_url=None, redoc_url=None)
    app.state.target = target

    async def work(request: Request, body: bytes) -> Response:
        if downstream.median_s <= 0 and not downstream.slots.locked():
            await downstream.call()  # a free slot and no service time: it never suspends, nothing to watch
        elif not await _unless_gone(downstream.call(), request.receive):
            return Response(status_code=GONE)
        return Response(body, media_type=JSON)

    for route in CATALOGUE:  # the one route catalogue: a route is served because it is listed there
        app.add_api_route(route.path, _handler(work, route.body), methods=[route.method], name=route.name)

    @app.get("/healthz")
    async def healthz() -> Response:
        return Response(b"ok", media_type="text/plain")

    app.state.admin = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    app.state.admin.include_router(_admin(target, Siblings(siblings or [])))

    @app.state.admin.get("/metrics")
    async def metrics_endpoint() -> Response:
        return Response(metrics.render(), media_type=CONTENT_TYPE_LATEST)

    app.add_middleware(IdempotencyMiddleware, keys=decider.keys)  # inside the limiter: every retry is counted, executed once
    app.add_middleware(RateLimitMiddleware, decider=decider, admitted_headers=config.admitted_headers)
    return app


def by_listener(api: FastAPI, admin_port: int) -> ASGIApp:
    """One ASGI app for uvicorn's two sockets: what arrives on ``admin_port`` reaches the admin
    app, everything else the API app (which also owns the lifespan: log, stores)."""
    admin = api.state.admin

    async def app(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        server = scope.get("server")
        if server is not None and server[1] == admin_port and scope["type"] != "lifespan":
            await admin(scope, receive, send)
        else:
            await api(scope, receive, send)

    return app


def _handler(work: Callable[[Request, bytes], Awaitable[Response]], body: bytes) -> Callable[[Request], Awaitable[Response]]:
    """A route's endpoint: one downstream call, then the route's answer."""
    async def endpoint(request: Request) -> Response:
        return await work(request, body)
    return endpoint


async def _unless_gone(work: Awaitable[None], receive: Callable[[], Awaitable[Any]]) -> bool:
    """Await ``work`` unless the client disconnects first (then ``work`` is cancelled, its
    downstream slot freed, and False returned). One watcher task per request, reading
    ``receive`` (uvicorn answers it with ``http.disconnect`` once the connection is gone)."""
    task = asyncio.current_task()
    assert task is not None
    gone = False

    async def watch() -> None:
        nonlocal gone
        while (await receive())["type"] != "http.disconnect":
            pass  # a body nobody reads: the routes take none
        gone = True
        task.cancel()

    watcher = asyncio.get_running_loop().create_task(watch())
    try:
        await work
    except asyncio.CancelledError:
        if not gone:
            raise
        task.uncancel()
        return False
    finally:
        watcher.cancel()
    return True


def _admin(target: Target, siblings: Siblings) -> APIRouter:
    router = APIRouter(prefix="/_bench")

    @router.get("/counters")
    async def counters() -> dict[str, Any]:
        own = _local_counters(target)
        if not siblings:
            return own
        others = [r.json() for r in await siblings.fetch_all("GET", "/_bench/counters")]
        return {**merge_counters([own, *others]), "processes": [own, *others]}

    @router.get("/state")
    async def state(limit: str = Query(max_length=64), key: str = Query(max_length=1024),
                    tier: str | None = Query(None, max_length=64), process: int = Query(0, ge=0)) -> Any:
        if process > len(siblings):
            raise HTTPException(status_code=404, detail=f"no process {process} (the node has {len(siblings) + 1})")
        if process > 0:
            params = {"limit": limit, "key": key, **({"tier": tier} if tier is not None else {})}
            (answer,) = await siblings.fetch_all("GET", "/_bench/state", [siblings.urls[process - 1]], params=params)
            return Response(answer.content, status_code=answer.status_code, media_type=JSON)
        try:
            variant = target.layer(limit).variant(tier)
        except KeyError:
            raise HTTPException(status_code=404, detail=f"no limit {limit!r}") from None
        if variant.remote:
            raise HTTPException(status_code=409, detail=f"limit {limit!r} keeps its state in Redis")
        return {"limit": limit, "key": key, "state": _plain(variant.store.state(key))}

    @router.post("/health")
    async def set_health(update: HealthUpdate) -> dict[str, Any]:
        if update.health is None:
            target.downstream.override = None
        else:
            target.downstream.set_health(update.health, update.factor)
        if siblings:  # every process serves its share of the connections: all see the override
            await siblings.fetch_all("POST", "/_bench/health", json=update.model_dump())
        health, factor = target.downstream.health()
        return {"health": health, "factor": factor}

    return router


def _local_counters(target: Target) -> dict[str, Any]:
    """This process's counters: what ``/_bench/counters`` shows, merged over a node's processes."""
    health, factor = target.downstream.health()
    limits = {}
    for layer in target.layers:
        decided, rejected = target.metrics.count(layer.name)
        limits[layer.name] = {
            "algorithm": layer.algorithm.name, "scope": layer.scope,
            "decisions": int(decided), "rejections": int(rejected),
            "keys": {tier or "default": None if v.remote else len(v.store) for tier, v in layer.variants.items()},
            "max_keys": target.config.store.max_keys,
            "evictions": sum(v.store.evictions for v in layer.variants.values() if not v.remote),
            "forgiven": sum(v.store.forgiven for v in layer.variants.values() if not v.remote),
            **({"current_limit": layer.current_limit} if layer.observes else {}),
            **({"redis": _redis_counters(target, layer)} if layer.remote else {}),
        }
    log = target.log
    return {
        "node": target.config.node, "algorithm": target.config.algorithm, "store": target.config.store.name,
        "downstream": {**asdict(target.downstream.counters), "health": health, "factor": factor},
        "limits": limits,
        "decision_log": None if log is None else {"written": log.written, "buffered": len(log.rows)},
    }


def _redis_counters(target: Target, layer: Layer) -> dict[str, Any]:
    """A Redis layer's failover counters (summed over its tiers) and its decisions by source."""
    store = target.config.store
    totals: dict[str, float] = {}
    for variant in layer.variants.values():
        for name, value in variant.store.metrics().items():
            totals[name.removeprefix("redis_")] = totals.get(name.removeprefix("redis_"), 0) + value
    return {"mode": store.mode, "fail_open": store.fail_open, "errors": int(totals["errors"]),
            "outages": int(totals["outages"]), "degraded_decisions": int(totals["degraded_decisions"]),
            "down": bool(totals["down"]), "by_source": target.metrics.by_source(layer.name)}


def _plain(state: Any) -> Any:
    """Limiter state as JSON (tuples and arrays become lists)."""
    if isinstance(state, (tuple, list)) or hasattr(state, "tolist"):
        return [_plain(v) for v in state]
    return state
