"""With a degraded downstream the adaptive limiter lowers its limit and says so in its headers,
counters and metrics. What that does to P99 beside fixed limiters is a timed comparison: the
campaigns measure it (the default campaign's unhealthy_downstream runs and their answer); it is
not asserted here, where the suite's other test processes share the cores."""

from __future__ import annotations

import asyncio
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


def test_adaptive_limit_falls_under_a_degraded_downstream_and_says_so(start):
    target = start.many({"adaptive": ["--algorithm", "adaptive", *POLICY]})["adaptive"]
    _, limits = asyncio.run(_drive(target.url, target.admin_url))
    assert limits[0] == 16 and min(limits) < 12 and limits[-1] < 16
    counters = httpx.get(target.admin_url + "/_bench/counters").json()
    assert counters["limits"]["adaptive"]["current_limit"] < 16
    assert 'ratelimit_adaptive_limit{limit="adaptive"}' in httpx.get(target.admin_url + "/metrics").text


def test_the_rules_run_on_the_target_through_the_same_interface(start):
    """Envoy's controller starts pinned at its minimum concurrency (3) to measure its minRTT.
    go-zero's shedder shows the ceiling (16) until the sampler feeds it the target's CPU: with a
    threshold of 0.1% of a core, any reading of a target serving requests is "hot", and its
    limit falls to max flight (a few passes of ~20 ms per 100 ms bucket). Without the sampler
    the CPU stays 0 and the limit 16."""
    rules = {"envoy": [], "gozero": ["--param", "cpu_threshold=0.001"]}
    targets = start.many({rule: ["--algorithm", "adaptive", *POLICY, "--param", f"rule={rule}", *extra]
                          for rule, extra in rules.items()})
    envoy = httpx.get(targets["envoy"].url + "/api/items")
    assert envoy.status_code == 200 and envoy.headers["ratelimit-policy"] == '"adaptive";q=3'
    url = targets["gozero"].url + "/api/items"
    assert httpx.get(url).status_code == 200  # the first one always passes: nothing in flight

    async def serve_for(seconds: float) -> None:
        """Closed-loop clients, so the target burns CPU ticks psutil can see in each 250 ms."""
        async with httpx.AsyncClient(timeout=30) as client:
            stop = time.monotonic() + seconds

            async def user() -> None:
                while time.monotonic() < stop:
                    await client.get(url)

            await asyncio.gather(*(user() for _ in range(CLIENTS)))

    asyncio.run(serve_for(1.5))  # six sampler periods of serving
    counters = httpx.get(targets["gozero"].admin_url + "/_bench/counters").json()
    assert counters["limits"]["adaptive"]["current_limit"] < 16
