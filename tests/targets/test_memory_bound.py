"""A key-rotation attack (200,000 distinct client addresses) cannot grow the store past its
bound. Driven in process through the real middleware (HTTP would take minutes here); the HTTP
variant with fewer keys is in test_http.py."""

from __future__ import annotations

import asyncio

from targets.config import load
from targets.decider import Decider
from targets.downstream import Downstream
from targets.keys import KeyPolicy
from targets.layers import build_layers
from targets.metrics import Metrics
from targets.middleware import RateLimitMiddleware

KEYS = 200_000
BOUND = 1_000


async def _ok(scope, receive, send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b""})


def test_200k_distinct_keys_stay_within_max_keys():
    config = load(None, {"algorithm": "sliding_log", "store": {"max_keys": BOUND}})
    layers, routes = build_layers(config)
    middleware = RateLimitMiddleware(_ok, decider=Decider(routes, KeyPolicy(config.keys), None,
                                                               Metrics(layers, Downstream(config.downstream, 0.0)), "t", "memory"))
    store = layers[0].variant(None).store
    statuses: list[int] = []

    async def send(message) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def attack() -> int:
        largest = 0
        for i in range(KEYS):
            peer = f"10.{i >> 16}.{(i >> 8) & 255}.{i & 255}"
            await middleware({"type": "http", "method": "GET", "path": "/api/items", "client": (peer, 1), "headers": []},
                             receive, send)
            if i % 1000 == 0:
                largest = max(largest, len(store))
        return max(largest, len(store))

    assert asyncio.run(attack()) <= BOUND
    assert len(statuses) == KEYS and set(statuses) == {200}  # every new key starts fresh
    assert store.evictions == KEYS - BOUND
