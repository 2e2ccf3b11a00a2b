"""What `validate --live` replays: a policy file turned into live runs of the suite's own traffic
models against a target built from the file, for LiveRunner. Pure: nothing starts here.

One run per situation: ``page-loads`` (the expected users at their peak rate plus one abusive
client; every limit on the page route, layered as in the file), ``nat`` (the expected clients
behind one address; only when an ip-keyed limit covers the page route) and ``burst-LIMIT`` (a
boundary burst at one key, per capacity limit on the page route, on a window compressed to
seconds: over-admission is a ratio, unchanged when every duration and rate is scaled together).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from contract.routes import TARGET_ROUTES
from contract.stores import StoreChoice
from harness.campaign.live import Campaign, LiveScenario
from harness.campaign.policy_file import Limit, PolicyFile
from harness.live.plan import LiveRun, SuiteLimiter
from scenarios import TrafficModel, build_model
from targets.algorithms import Policy, build_params

from .checks import burst_of
from .sim import PARALLEL_SPREAD_S

PAGE_LOADS_S = 10.0
"""Length of the page-load run: a page or two per user at the usual peak rates."""
BURST_WINDOW_S = 2.0
"""A boundary burst meets the limit on a window compressed to this (or the limit's own, if shorter)."""
EDGE_GAP = 0.9
"""Each half fires this share of W/2 away from the edge, so that a half still arriving (cold
connections, a busy machine) lands on its own side."""
BURST_REQUESTS = 100
"""Requests a side: each costs L/100 (at least the route's cost, at most what the limit admits
at once). Over-admission is in cost units, so it is unchanged up to one request's cost, and a
burst stays tight at the target whatever L is (600 requests spread over a second here)."""
MAX_BURST_REQUESTS = 800
"""A limit needing more requests a side (a tiny burst on a large L) is left to the simulation."""
PAGE_ROUTE = "GET /api/items"
"""The route the traffic models call: the target serves the policy's page route there."""
TARGET_ROUTE = TARGET_ROUTES[PAGE_ROUTE]
REDIS_TIMEOUT_S = 1.0
"""A live run's Redis call fails after this, not the store's 50 ms: Redis stays up live (its
failure modes are simulated), and on a busy machine a slow answer counted as an outage hands the
decisions to the fallback (measured: 198 of a boundary burst's 200), so the run measures the
fallback's limit instead of the policy's."""
MAX_NODES = 2
"""Target nodes started live at most (each is a uvicorn process on the same cores)."""
CAMPAIGN: dict[str, Any] = {
    "scale": {"workers": 1, "lead_s": 2.0, "drain_s": 1.0},
    # no simulated service time: P99 and CPU are the limiter's and the HTTP stack's alone
    "downstream": {"concurrency": 64, "median_ms": 0, "sigma": 0},
}


@dataclass(frozen=True)
class Probe:
    kind: str
    """``page-loads``, ``nat`` or ``burst``."""
    run: LiveRun
    summary: str
    """The progress line: what this run replays."""
    limit: Limit | None = None
    """``burst``: the limit under attack."""
    burst_size: int = 0


@dataclass(frozen=True)
class ProbePlan:
    campaign: Campaign | None
    """None when there is nothing to replay."""
    probes: list[Probe]
    notes: list[str]
    """What the live replay does not reproduce, printed beside the verdict."""
    setup: str = ""
    """Nodes and store, for the progress lines."""


def page_limits(policy: PolicyFile) -> list[Limit]:
    return [lim for lim in policy.limits if lim.covers(policy.page_route.name)]


def _keyed_by_proxy(policy: PolicyFile) -> bool:
    """Behind proxies with no trusted hop count, every client has the proxy's address."""
    return policy.keys.behind_proxies and policy.keys.trusted_proxies is None


def _layer(lim: Limit, shared_ip: bool, scale: float = 1.0) -> dict[str, Any]:
    """One target layer. The load generator has one address (127.0.0.1) and sends each client's
    identity as its API key: a limit keyed by IP counts that one address only where the clients
    really share one (NAT, or a proxy's address), else each client's own key."""
    params = {k: v / scale if k.endswith("_s") and isinstance(v, int | float) else v for k, v in lim.params.items()}
    return {"name": lim.name, "scope": "ip" if lim.key == "ip" and shared_ip else "api_key",
            "routes": [TARGET_ROUTE], "algorithm": lim.algorithm, "limit": lim.limit,
            "window_s": lim.window_s / scale, "burst": lim.burst, "params": params}


def _target(policy: PolicyFile, layers: list[dict[str, Any]], cost: float) -> dict[str, Any]:
    keys = policy.keys
    return {
        "algorithm": layers[0]["algorithm"],
        "limits": layers,
        "routes": {TARGET_ROUTE: {"cost": cost}},
        "keys": {"trusted_proxies": keys.trusted_proxies or 0, "ipv6_prefix": keys.ipv6_prefix or 128},
    }


def live_store(policy: PolicyFile) -> StoreChoice:
    """The runner's store for the file's: its Redis mode, or local nodes (the redis store's
    ``local`` mode keeps a memory store per node and needs no Redis)."""
    store = policy.store
    mode = store.effective_mode
    if mode == "local":
        return StoreChoice() if live_nodes(policy) == 1 else StoreChoice("redis", "local", store.divide_by_nodes)
    return StoreChoice("redis", mode)


def live_nodes(policy: PolicyFile) -> int:
    return min(policy.nodes, MAX_NODES)


def _page_probe(policy: PolicyFile, kind: str) -> Probe:
    t, limits = policy.traffic, page_limits(policy)
    nat = kind == "nat"
    users = t.nat_clients if nat else t.users
    think = t.page_load / (t.peak_requests_per_min / 60.0)
    params = {"users": users, "page_size": t.page_load, "followups": 0, "parallel_spread_s": PARALLEL_SPREAD_S,
              "think_s": think, "min_think_s": think / 2, "abusers": 0 if nat else 1,
              "abuse_factor": t.abuse_factor, "duration_s": PAGE_LOADS_S}
    layers = [_layer(lim, shared_ip=nat or _keyed_by_proxy(policy)) for lim in limits]
    first = limits[0]
    # the run's nominal policy is the first limit's rate per second: LiveRunner aligns a run's
    # start to its window (up to W of waiting) and the abusive client's rate is a multiple of it;
    # the target enforces the file's own limits (target.yaml)
    nominal = Policy(first.limit / first.window_s, 1.0)
    scenario = LiveScenario(name="page_load_burst", params=params, target=_target(policy, layers, policy.page_route.cost),
                            policy={"limit": nominal.limit, "window_s": nominal.window_s}, algorithms=[first.algorithm],
                            label="nat" if nat else None)
    run = LiveRun(scenario, SuiteLimiter(first.algorithm, live_store(policy)), nominal,
                  build_params(first.algorithm, nominal), [0.0] * live_nodes(policy), model=_model(policy, scenario, nominal))
    who = f"{users} clients behind one address" if nat else f"{users} users + 1 abusive client"
    return Probe(kind, run, f"{kind}: {who}, pages of {t.page_load} at {t.peak_requests_per_min:g}/min, "
                             f"{PAGE_LOADS_S:g} s")


def _model(policy: PolicyFile, scenario: LiveScenario, at: Policy) -> TrafficModel:
    """The probe's traffic model, at the run's policy and the file's seed (the campaign's)."""
    return build_model(scenario.name, at.limit, at.window_s, policy.traffic.seed, scenario.params)


def burst_cost(policy: PolicyFile, lim: Limit) -> float:
    return max(policy.page_route.cost, min(burst_of(lim), lim.limit / BURST_REQUESTS))


def _burst_probe(policy: PolicyFile, lim: Limit, size: int) -> Probe:
    window = min(lim.window_s, BURST_WINDOW_S)
    scale = lim.window_s / window
    layer = _layer(lim, shared_ip=False, scale=scale)
    scaled = Policy(lim.limit, window, lim.burst)
    params = {"size": size, "boundaries": 1, "instant": 1, "delta_s": EDGE_GAP * window}
    scenario = LiveScenario(name="boundary_burst", params=params,
                            target=_target(policy, [layer], burst_cost(policy, lim)),
                            policy={"limit": lim.limit, "window_s": window, "burst": lim.burst},
                            algorithms=[lim.algorithm], label=lim.name.replace("_", "-"))
    run = LiveRun(scenario, SuiteLimiter(lim.algorithm, live_store(policy)), scaled,
                  build_params(lim.algorithm, scaled, layer["params"]),
                  [0.0] * live_nodes(policy), model=_model(policy, scenario, scaled))
    return Probe("burst", run, f"burst-{lim.name}: 2 x {size} requests of cost {burst_cost(policy, lim):g} at one "
                               f"key across a window edge ({lim.window_s:g} s window compressed to {window:g} s)",
                 lim, size)


def plan_live(policy: PolicyFile) -> ProbePlan:
    limits = page_limits(policy)
    notes: list[str] = []
    if not limits:
        return ProbePlan(None, [], [f"no limit covers the page route {policy.page_route.name!r}: nothing to replay live"])
    probes = [_page_probe(policy, "page-loads")]
    if any(lim.key == "ip" for lim in limits):
        probes.append(_page_probe(policy, "nat"))
    for lim in limits:
        if lim.protects != "capacity":
            continue
        size = math.ceil(lim.limit / burst_cost(policy, lim))
        if size > MAX_BURST_REQUESTS:
            notes.append(f"'{lim.name}': a boundary burst needs {size} requests a side (> {MAX_BURST_REQUESTS}); "
                         "its over-admission is simulated only")
        else:
            probes.append(_burst_probe(policy, lim, size))
    if policy.nodes > MAX_NODES:
        notes.append(f"live runs {MAX_NODES} target nodes for the file's {policy.nodes}")
    if policy.store.backend == "redis":
        notes.append("the store's failure modes (fail-open, fallback) are simulated only: Redis stays up live")
    others = [lim.name for lim in policy.limits if lim not in limits]
    if others:
        notes.append(f"live traffic calls the page route only: {', '.join(others)} checked in simulation only")
    campaign = Campaign.model_validate({
        "name": policy.name, "seed": policy.traffic.seed, **CAMPAIGN, "stores": [live_store(policy).label],
        "nodes": live_nodes(policy),
        "redis": {"fail_open": policy.store.on_failure == "fail_open", "timeout_s": REDIS_TIMEOUT_S},
        "policy": probes[0].run.scenario.policy.model_dump(),
        "algorithms": sorted({p.run.suite.algorithm for p in probes}),
        "scenarios": [p.run.scenario.model_dump() for p in probes],
    })
    return ProbePlan(campaign, probes, notes, f"{live_nodes(policy)} target node(s), store {live_store(policy).label}")
