"""The limiter's own cost per request, without the network: each target's ASGI app (the same
``create_app`` the server runs, decision log and metrics included) is called directly in one
process with a fixed ``GET /api/items`` scope, rounds interleaved, medians reported.

wrk's figures move with everything else on a shared machine; this one moves far less, and its
difference to ``none`` is what the limiter adds to a request (keys, decision, quota headers, log
row, metrics, release). The whole HTTP request costs more (uvicorn's parsing and socket work),
so the HTTP ratio to ``none`` is higher than this in-process one.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from pathlib import Path
from typing import Any

from targets.app import create_app
from targets.config import load

SCOPE: dict[str, Any] = {
    "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
    "path": "/api/items", "raw_path": b"/api/items", "query_string": b"", "root_path": "",
    "headers": [(b"host", b"127.0.0.1"), (b"user-agent", b"bench")],
    "client": ("127.0.0.1", 40000), "server": ("127.0.0.1", 8000),
}


async def _receive() -> dict[str, Any]:
    return {"type": "http.request", "body": b"", "more_body": False}


def _sender(expected: int) -> Any:
    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start" and message["status"] != expected:
            raise RuntimeError(f"status {message['status']}: the benchmark policy must answer {expected}")

    return send


async def _per_request_us(app: Any, requests: int, expected: int) -> float:
    send = _sender(expected)
    start = time.perf_counter()
    for _ in range(requests):
        await app({**SCOPE, "state": {}}, _receive, send)
    return (time.perf_counter() - start) / requests * 1e6


def in_process_us(names: list[str], overrides: dict[str, dict[str, Any]], log_dir: Path,
                  rounds: int = 5, requests: int = 5000) -> dict[str, float]:
    """Median wall time per request (us) of each target's app, called in-process (a name
    with ``[refusing``: its policy refuses, every answer after the first is a 429)."""
    apps = {}
    for i, name in enumerate(names):
        config = load(None, {**overrides[name], "decision_log": {"path": str(log_dir / f"asgi-{i}.parquet")}})
        apps[name] = create_app(config)
    loop = asyncio.new_event_loop()
    try:
        samples: dict[str, list[float]] = {name: [] for name in names}
        expected = {name: 429 if "[refusing" in name else 200 for name in names}
        for name, app in apps.items():  # warm-up, unmeasured: first calls pay imports and caches
            loop.run_until_complete(app({**SCOPE, "state": {}}, _receive, _sender(200)))  # the first is admitted
            loop.run_until_complete(_per_request_us(app, requests // 5, expected[name]))
        for _ in range(rounds):
            for name, app in apps.items():
                samples[name].append(loop.run_until_complete(_per_request_us(app, requests, expected[name])))
                log = app.state.target.log
                if log is not None:
                    log.rows.clear()  # never started: the rows would only pile up
    finally:
        loop.close()
    return {name: statistics.median(s) for name, s in samples.items()}
