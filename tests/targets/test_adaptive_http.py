"""With a degraded downstream the adaptive limiter lowers its limit and keeps the latency of
what it admits below the fixed limiters'. Short, with a generous margin: the measured
comparison belongs to the campaigns."""

from __future__ import annotations

import asyncio
import statistics
import time

import httpx

CLIENTS = 16
HEALTHY_S, SETTLE_S, MEASURE_S = 1.5, 1.5, 2.5
# burst 16 = the adaptive limiter's starting (and highest) limit; a rate no client reaches
POLICY = ["--limit", "100000", "--window", "1", "--burst", "16", "--cost", "reports=1",
          "--concurrency", "4", "--service-ms", "20", "--service-sigma", "0.1"]
DEGRADED = {"health": "degraded", "factor": 10}


async def _drive(url: str, admin_url: str) -> tuple[list[float], list[int]]:
    """Closed-loop clients; returns the latencies of requests admitted after the settling time
    and the limits seen (X-RateLimit-Limit: the adaptive limit's quota is its current limit)."""
    latencies: list[float] = []
    limits: list[int] = []
    async with httpx.AsyncClient(base_url=url, timeout=30, limits=httpx.Limits(max_connections=CLIENTS + 2)) as client:
        start = time.monotonic()
        degraded_at = start + HEALTHY_S
        stop = degraded_at + SETTLE_S + MEASURE_S

        async def degrade() -> None:
            await asyncio.sleep(HEALTHY_S)
            (await client.post(admin_url + "/_bench/health", json=DEGRADED)).raise_for_status()

        async def user() -> None:
            while (sent := time.monotonic()) < stop:
                r = await client.get("/api/items")
                if r.headers.get("ratelimit-policy", "").startswith('"adaptive"'):
                    limits.append(int(r.headers["x-ratelimit-limit"]))
                    assert r.headers["ratelimit-policy"] == f'"adaptive";q={limits[-1]}'
                if r.status_code == 429:
                    await asyncio.sleep(0.05)
                elif sent >= degraded_at + SETTLE_S:
                    latencies.append(time.monotonic() - sent)

        await asyncio.gather(degrade(), *(user() for _ in range(CLIENTS)))
    return latencies, limits


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[98]


def test_adaptive_limit_falls_and_keeps_admitted_p99_below_fixed_limiters(start):
    targets = start.many({name: ["--algorithm", name, *POLICY] for name in ("adaptive", "token_bucket", "fixed_window")})

    async def drive_all() -> list[tuple[list[float], list[int]]]:
        return await asyncio.gather(*(_drive(t.url, t.admin_url) for t in targets.values()))

    results = dict(zip(targets, asyncio.run(drive_all())))
    adaptive_latencies, limits = results["adaptive"]
    assert limits[0] == 16 and min(limits) < 12 and limits[-1] < 16
    counters = httpx.get(targets["adaptive"].admin_url + "/_bench/counters").json()
    assert counters["limits"]["adaptive"]["current_limit"] < 16
    assert 'ratelimit_adaptive_limit{limit="adaptive"}' in httpx.get(targets["adaptive"].url + "/metrics").text
    adaptive = p99(adaptive_latencies)
    for name in ("token_bucket", "fixed_window"):
        fixed_latencies, _ = results[name]
        assert len(fixed_latencies) >= 10 and len(adaptive_latencies) >= 10
        assert adaptive < 0.8 * p99(fixed_latencies), (name, adaptive, p99(fixed_latencies), min(limits))
