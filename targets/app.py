"""The target app factory: one FastAPI app from a ``TargetConfig`` (algorithm, params, store,
key policy, layered limits, route costs, downstream).

Routes: ``GET /api/items``, ``GET /api/search``, ``POST /api/reports``, ``POST /login`` (each
one downstream call), ``GET /healthz`` (never limited), ``GET /metrics`` (Prometheus), and
the admin endpoints under ``/_bench/`` (loopback peers only): counters, limiter state, health.
"""

from __future__ import annotations

import ipaddress
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass
from typing import Any

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import BaseModel, ConfigDict, Field

from .config import Health, TargetConfig
from .decision_log import DecisionLog
from .downstream import Downstream
from .idempotency import IdempotencyMiddleware
from .keys import KeyPolicy
from .layers import Layer, build_layers, remote_stores
from .metrics import Metrics
from .middleware import RateLimitMiddleware

JSON = "application/json"


@dataclass
class Target:
    """What the admin endpoints and tests reach through ``app.state.target``."""

    config: TargetConfig
    layers: list[Layer]
    downstream: Downstream
    metrics: Metrics
    log: DecisionLog | None

    def layer(self, name: str) -> Layer:
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise KeyError(name)


class HealthUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    health: Health | None
    """None: back to the configured schedule."""
    factor: float = Field(1.0, ge=1, allow_inf_nan=False)


def create_app(config: TargetConfig) -> FastAPI:
    layers, routes = build_layers(config)
    downstream = Downstream(config.downstream, config.schedule_start())
    log = DecisionLog(config.decision_log.path, config.decision_log.flush_every_s) if config.decision_log.path else None
    metrics = Metrics(layers, downstream)
    target = Target(config, layers, downstream, metrics, log)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if log is not None:
            log.start()
        try:
            yield
        finally:
            for _, store in remote_stores(layers):
                await store.aclose()
            if log is not None:
                log.close()  # uvicorn runs this on SIGTERM: every buffered row reaches the file

    app = FastAPI(lifespan=lifespan, openapi_url=None, docs_url=None, redoc_url=None)
    app.state.target = target

    async def work(body: bytes) -> Response:
        await downstream.call()
        return Response(body, media_type=JSON)

    @app.get("/api/items")
    async def items() -> Response:
        return await work(b'{"items":[1,2,3]}')

    @app.get("/api/search")
    async def search() -> Response:
        return await work(b'{"results":[]}')

    @app.post("/api/reports")
    async def reports() -> Response:
        return await work(b'{"report":"queued"}')

    @app.post("/login")
    async def login() -> Response:
        return await work(b'{"ok":true}')

    @app.get("/healthz")
    async def healthz() -> Response:
        return Response(b"ok", media_type="text/plain")

    @app.get("/metrics")
    async def metrics_endpoint() -> Response:
        return Response(metrics.render(), media_type=CONTENT_TYPE_LATEST)

    app.include_router(_admin(target))
    app.add_middleware(IdempotencyMiddleware)  # inside the limiter: every retry is counted, executed once
    app.add_middleware(RateLimitMiddleware, routes=routes, keys=KeyPolicy(config.keys), log=log, metrics=metrics,
                       node=config.node, store=config.store.name, admitted_headers=config.admitted_headers)
    return app


def _loopback_only(request: Request) -> None:
    host = request.client.host if request.client else ""
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise HTTPException(status_code=403, detail="admin endpoints answer loopback peers only")


def _admin(target: Target) -> APIRouter:
    router = APIRouter(prefix="/_bench", dependencies=[Depends(_loopback_only)])

    @router.get("/counters")
    async def counters() -> dict[str, Any]:
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

    @router.get("/state")
    async def state(limit: str, key: str, tier: str | None = None) -> dict[str, Any]:
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
        health, factor = target.downstream.health()
        return {"health": health, "factor": factor}

    return router


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
