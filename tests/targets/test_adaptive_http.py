"""With a degraded downstream the adaptive limiter lowers its limit and says so in its headers,
counters and metrics. What that does to P99 beside fixed limiters is a timed comparison: the
campaigns measure it (the default campaign's unhealthy_downstream runs and their answer); it is
not asserted here, where the suite's other test processes share the cores."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import httpx

CLIENTS = 16
HEALTHY_S = 1.5
# burst 16 = the adaptive limiter's starting (and highest) limit; a rate no client reaches
POLICY = ["--limit", "100000", "--window", "1", "--burst", "16", "--cost", "reports=1",
          "--concurrency", "4", "--service-ms", "20", "--service-sigma", "0.1"]
DEGRADED = {"health": "degraded", "factor": 10}


async def _serve(url: str, admin_url: str, clients: int, fallen: Callable[[list[int], float], bool],
                 degrade_after_s: float | None = None, timeout_s: float = 60) -> list[int]:
    """Closed-loop clients (degrading the downstream after ``degrade_after_s``) until
    ``fallen(limits seen, the target's current limit)``, the latter read every 250 ms, or
    ``timeout_s``: how soon the limit falls depends on the machine, so the test waits on what the
    target decided. Returns the limits seen (X-RateLimit-Limit: the adaptive quota is its limit)."""
    limits: list[int] = []
    current = 16.0
    async with httpx.AsyncClient(base_url=url, timeout=30, limits=httpx.Limits(max_connections=clients + 2)) as client:
        stop = time.monotonic() + timeout_s

        def done() -> bool:
            return fallen(limits, current) or time.monotonic() > stop

        async def watch() -> None:
            nonlocal current
            if degrade_after_s is not None:
                await asyncio.sleep(degrade_after_s)
                (await client.post(admin_url + "/_bench/health", json=DEGRADED)).raise_for_status()
            while not done():
                await asyncio.sleep(0.25)
                current = (await client.get(admin_url + "/_bench/counters")).json()["limits"]["adaptive"]["current_limit"]

        async def user() -> None:
            while not done():
                r = await client.get("/api/items")
                if r.headers.get("ratelimit-policy", "").startswith('"adaptive"'):
                    limits.append(int(r.headers["x-ratelimit-limit"]))
                    assert r.headers["ratelimit-policy"] == f'"adaptive";q={limits[-1]}'
                if r.status_code == 429:
                    await asyncio.sleep(0.05)

        await asyncio.gather(watch(), *(user() for _ in range(clients)))
    return limits


def test_adaptive_limit_falls_under_a_degraded_downstream_and_says_so(start):
    target = start.many({"adaptive": ["--algorithm", "adaptive", *POLICY]})["adaptive"]

    def fallen(limits: list[int], current: float) -> bool:
        return bool(limits) and min(limits) < 12 and limits[-1] < 16 and current < 16

    limits = asyncio.run(_serve(target.url, target.admin_url, CLIENTS, fallen, degrade_after_s=HEALTHY_S))
    assert limits[0] == 16 and min(limits) < 12 and limits[-1] < 16
    counters = httpx.get(target.admin_url + "/_bench/counters").json()
    assert counters["limits"]["adaptive"]["current_limit"] < 16
    assert 'ratelimit_adaptive_limit{limit="adaptive"}' in httpx.get(target.admin_url + "/metrics").text


def test_the_rules_run_on_the_target_through_the_same_interface(start):
    """Envoy's controller starts pinned at its minimum concurrency (3) to measure its minRTT.
    go-zero's shedder shows the ceiling (16) until the sampler feeds it the target's CPU: with a
    threshold of 0.1% of a core, any reading of a target serving requests is "hot", and its
    limit falls to max flight (passes per 100 ms bucket x their RT: about the requests in flight,
    here 4 closed-loop clients, whatever the machine's speed). Without the sampler the CPU stays 0
    and the limit 16."""
    rules = {"envoy": [], "gozero": ["--param", "cpu_threshold=0.001"]}
    targets = start.many({rule: ["--algorithm", "adaptive", *POLICY, "--param", f"rule={rule}", *extra]
                          for rule, extra in rules.items()})
    envoy = httpx.get(targets["envoy"].url + "/api/items")
    assert envoy.status_code == 200 and envoy.headers["ratelimit-policy"] == '"adaptive";q=3'
    gozero = targets["gozero"]
    assert httpx.get(gozero.url + "/api/items").status_code == 200  # the first one always passes: nothing in flight
    asyncio.run(_serve(gozero.url, gozero.admin_url, 4, lambda _limits, current: current < 16))
    counters = httpx.get(gozero.admin_url + "/_bench/counters").json()
    assert counters["limits"]["adaptive"]["current_limit"] < 16
