"""A 503 through the middleware: go-zero's shedding handler calls ``promise.Fail()`` (no pass,
no RT recorded, the slot given back); the Netflix rules sample it like any response."""

from __future__ import annotations

import asyncio

from targets.config import TargetConfig
from targets.decider import Decider
from targets.downstream import Downstream
from targets.keys import GLOBAL_KEY, KeyPolicy
from targets.layers import build_layers
from targets.metrics import Metrics
from targets.middleware import RateLimitMiddleware


def _answering(status: int):
    async def app(scope, receive, send) -> None:
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    return app


def _state_after(rule: str, status: int, requests: int = 5):
    config = TargetConfig.model_validate({"algorithm": "adaptive", "limit": 100, "window_s": 1, "burst": 8,
                                          "params": {"rule": rule}})
    layers, routes = build_layers(config)
    middleware = RateLimitMiddleware(_answering(status), decider=Decider(routes, KeyPolicy(config.keys), None, Metrics(
        layers, Downstream(config.downstream, 0.0)), "t", "memory"))

    async def send(message) -> None:
        return None

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def drive() -> None:
        for _ in range(requests):
            await middleware({"type": "http", "method": "GET", "path": "/api/items", "client": ("10.0.0.1", 1),
                              "headers": []}, receive, send)

    asyncio.run(drive())
    return layers[0].variant(None).store.state(GLOBAL_KEY)


def test_gozero_records_no_pass_for_a_503_but_gives_the_slot_back():
    _, in_flight, memo = _state_after("gozero", 503)
    assert memo[0] == () and in_flight == 0
    assert memo[1] == 0.0  # the average flying still moved on each release (0 in flight after each)
    _, _, ok_memo = _state_after("gozero", 200)
    assert sum(b[1] for b in ok_memo[0]) == 5


def test_gradient2_samples_a_503_like_any_response():
    _, in_flight, memo = _state_after("gradient2", 503)
    assert memo[1] == 5 and in_flight == 0
