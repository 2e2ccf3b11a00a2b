"""With a degraded downstream the adaptive limiter lowers its limit and says so in its headers,
counters and metrics. What that does to P99 beside fixed limiters is a timed comparison: the
campaigns measure it (the default campaign's unhealthy_downstream runs and their answer); it is
not asserted here, where the suite's other test processes share the cores."""

from __future__ import annotations

import asyncio
import time

import httpx

CLIENTS = 16
HEALTHY_S = 1.5
# burst 16 = the adaptive limiter's starting (and highest) limit; a rate no client reaches
POLICY = ["--limit", "100000", "--window", "1", "--burst", "16", "--cost", "reports=1",
          "--concurrency", "4", "--service-ms", "20", "--service-sigma", "0.1"]
DEGRADED = {"health": "degraded", "factor": 10}


async def _drive(url: str, admin_url: str, timeout_s: float) -> list[int]:
    """Closed-loop clients, healthy for 1.5 s, then degraded until the limits the target sends have
    fallen under 12 and its counters say under 16 (read every 250 ms), or ``timeout_s``: how fast
    it falls depends on the machine, what it falls to on the RTs the limiter measured. Returns the
    limits seen (X-RateLimit-Limit: the adaptive limit's quota is its current limit)."""
    limits: list[int] = []
    current = 16.0
    async with httpx.AsyncClient(base_url=url, timeout=30, limits=httpx.Limits(max_connections=CLIENTS + 2)) as client:
        stop = time.monotonic() + timeout_s

        def fallen() -> bool:
            return (limits and min(limits) < 12 and limits[-1] < 16 and current < 16) or time.monotonic() > stop

        async def degrade_and_watch() -> None:
            nonlocal current
            await asyncio.sleep(HEALTHY_S)
            (await client.post(admin_url + "/_bench/health", json=DEGRADED)).raise_for_status()
            while not fallen():
                await asyncio.sleep(0.25)
                current = (await client.get(admin_url + "/_bench/counters")).json()["limits"]["adaptive"]["current_limit"]

        async def user() -> None:
            while not fallen():
                r = await client.get("/api/items")
                if r.headers.get("ratelimit-policy", "").startswith('"adaptive"'):
                    limits.append(int(r.headers["x-ratelimit-limit"]))
                    assert r.headers["ratelimit-policy"] == f'"adaptive";q={limits[-1]}'
                if r.status_code == 429:
                    await asyncio.sleep(0.05)

        await asyncio.gather(degrade_and_watch(), *(user() for _ in range(CLIENTS)))
    return limits


def test_adaptive_limit_falls_under_a_degraded_downstream_and_says_so(start):
    target = start.many({"adaptive": ["--algorithm", "adaptive", *POLICY]})["adaptive"]
    limits = asyncio.run(_drive(target.url, target.admin_url, timeout_s=60))
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
    and the limit 16. Served until the target reports a lower limit (a sampler period is 250 ms;
    a busy machine may take several), so the test waits on what the target decided."""
    rules = {"envoy": [], "gozero": ["--param", "cpu_threshold=0.001"]}
    targets = start.many({rule: ["--algorithm", "adaptive", *POLICY, "--param", f"rule={rule}", *extra]
                          for rule, extra in rules.items()})
    envoy = httpx.get(targets["envoy"].url + "/api/items")
    assert envoy.status_code == 200 and envoy.headers["ratelimit-policy"] == '"adaptive";q=3'
    url = targets["gozero"].url + "/api/items"
    assert httpx.get(url).status_code == 200  # the first one always passes: nothing in flight

    async def serve_until_the_limit_falls(timeout_s: float) -> float:
        """Closed-loop clients, so the target burns CPU ticks psutil can see in each 250 ms; the
        target's own current limit, read every 250 ms, once it is under 16 or at the timeout."""
        async with httpx.AsyncClient(timeout=30) as client:
            stop = time.monotonic() + timeout_s
            limit = 16.0

            async def user() -> None:
                while time.monotonic() < stop and limit >= 16:
                    await client.get(url)

            async def watch() -> None:
                nonlocal limit
                while time.monotonic() < stop and limit >= 16:
                    await asyncio.sleep(0.25)
                    counters = (await client.get(targets["gozero"].admin_url + "/_bench/counters")).json()
                    limit = counters["limits"]["adaptive"]["current_limit"]

            await asyncio.gather(watch(), *(user() for _ in range(4)))
            return limit

    assert asyncio.run(serve_until_the_limit_falls(60)) < 16
