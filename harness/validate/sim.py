"""Virtual-time experiments behind `validate`: one limit, deployed as the policy says, replayed
with the policy's own traffic expectations through the simulator's replay loops.

A deployment is how one limit is enforced in a situation (normal, one node down, store down):
one store (a shared Redis holds one state per key) or N independent memory stores with requests
dealt round-robin (local limits on N nodes behind a balancer without affinity). Results are
cached per (deployment, traffic), so lints, checks and suggestions that ask the same question
pay for one replay.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from analysis.metrics import max_window_cost, over_admission
from contract.schema import ABUSIVE, LEGIT
from harness.campaign.policy_file import Limit, PolicyFile, params_of
from harness.sim.cluster_store import ClusterStore
from harness.sim.decision_columns import DecisionColumns
from harness.sim.simulator import replay_on
from scenarios import Arrivals, TrafficModel, build_model
from targets.algorithms import Policy, build_params, get_algorithm

PARALLEL_SPREAD_S = 0.005
"""A page's parallel calls land within this span (the page_load_burst default)."""
PAGE_SAMPLE = 5_000
"""Pages enough to read a page-load rejection rate from: users of their own key on one store are
replayed only as many as give this many pages (``PageTraffic.thinned``)."""


@dataclass(frozen=True)
class Deployment:
    """One limit as enforced in one situation."""

    algorithm: str
    params: Any
    """Per-node parameters (already divided for divided local limits)."""
    limit: float
    """The cluster-wide L that over-admission is measured against."""
    window_s: float
    nodes: int = 1
    """Independent stores, requests dealt round-robin; 1 = one shared state."""
    rejects_all: bool = False
    """Fail-closed with the store down."""


def deployment(policy: PolicyFile, limit: Limit, situation: str = "normal") -> Deployment:
    """How ``limit`` is enforced when everything is up (``normal``), with one of the nodes down
    (``node_down``) or with the shared store down (``store_down``)."""
    store, n = policy.store, policy.nodes
    mode = store.effective_mode
    base = dict(limit=limit.limit, window_s=limit.window_s)
    if situation == "store_down":
        if store.on_failure == "fail_closed":
            return Deployment(limit.algorithm, params_of(limit), rejects_all=True, **base)
        if store.fallback == "none":
            return Deployment("none", build_params("none", Policy(limit.limit, limit.window_s)), **base)
        divisor = n if store.fallback == "local_divided" else 1
        return Deployment(limit.algorithm, params_of(limit, divisor), nodes=n, **base)
    if mode == "naive":  # INCR then EXPIRE counts a fixed window, whatever the algorithm says
        return Deployment("fixed_window", build_params("fixed_window", Policy(limit.limit, limit.window_s)), **base)
    if mode == "local":
        up = n - 1 if situation == "node_down" else n
        return Deployment(limit.algorithm, params_of(limit, policy.local_divisor), nodes=up, **base)
    # shared and leased keep one state per key in the store (leases are modelled as shared)
    return Deployment(limit.algorithm, params_of(limit), **base)


def bounded(dep: Deployment) -> bool:
    """Whether the deployment can never admit more than its L in any window of its W, by
    construction: one state (no nodes dealt over, not failing closed) of an algorithm that declares
    such a bound (``window_bound``: the sliding log) at this L and W or tighter. Its over-admission
    and abusive admission are then at most 1, whatever the traffic."""
    bound = get_algorithm(dep.algorithm).window_bound
    if bound is None or dep.nodes != 1 or dep.rejects_all:
        return False
    most, window = bound(dep.params)
    return most <= dep.limit and window >= dep.window_s


def replayed(dep: Deployment, traffic: Arrivals | TrafficModel) -> tuple[Arrivals, tuple[np.ndarray, ...]]:
    """Replay traffic (arrivals, or a closed-loop model) through the deployment: the requests as
    decided and the decisions' columns (allowed, remaining, retry_after_s, reset_s, delay_s)."""
    store = ClusterStore(get_algorithm(dep.algorithm), dep.params, max(1, dep.nodes))
    result = replay_on(store, traffic)
    return result.arrivals, DecisionColumns.of(result.decisions)


def run(dep: Deployment, traffic: Arrivals | TrafficModel) -> pd.DataFrame:
    """``replayed`` as a frame: one row per decision."""
    a, (allowed, _remaining, retry, _reset, delay) = replayed(dep, traffic)
    return pd.DataFrame({
        "t": np.asarray(a.t, dtype=np.float64), "key": a.key, "cost": np.asarray(a.cost, dtype=np.float64),
        "client_id": a.client_id, "client_class": a.client_class,
        "allowed": allowed, "retry_after_s": retry, "delay_s": delay,
    })


@dataclass(frozen=True)
class PageTraffic:
    """Legitimate users loading pages at their peak rate (plus abusive clients at ``abuse_factor``
    times the limit's rate); ``shared_key`` puts every legitimate user on one key (NAT, proxy)."""

    users: int
    page_load: int
    cost: float
    peak_requests_per_min: float
    limit: float
    window_s: float
    abuse_factor: float
    abusers: int
    seed: int
    shared_key: bool = False
    one_key: bool = False
    """Every client on one key: a limit keyed ``global`` (one bucket for everyone)."""

    @classmethod
    def of(cls, policy: PolicyFile, limit: Limit, **changes: Any) -> PageTraffic:
        t = policy.traffic
        fields = dict(users=t.users, page_load=t.page_load, cost=policy.page_route.cost,
                      peak_requests_per_min=t.peak_requests_per_min, limit=limit.limit, window_s=limit.window_s,
                      abuse_factor=t.abuse_factor, abusers=1, seed=t.seed, one_key=limit.key == "global")
        return cls(**{**fields, **changes})

    @property
    def own_keys(self) -> bool:
        """Whether each user has a key of its own (none behind a NAT or a ``global`` key)."""
        return not (self.shared_key or self.one_key)

    @property
    def think_s(self) -> float:
        """A user's mean time from one page to the next, at its peak rate."""
        return self.page_load / (self.peak_requests_per_min / 60.0)

    @property
    def duration_s(self) -> float:
        """At least 5 windows and 20 pages per user."""
        return max(5 * self.window_s, 20 * self.think_s)

    def thinned(self) -> PageTraffic:
        """The same traffic with only as many users as give PAGE_SAMPLE pages, for a deployment on
        one store: each user on a key of its own is then an independent copy of the others (the
        first users' arrivals are the same whatever the count: one random stream, user by user),
        so the rates read from fewer users are read from the same process. A limit of a day at a
        user's peak of 30 a minute replays 27,000 pages per user, not 20 times that. Users that
        share a key, or whose requests are dealt over several nodes, are all kept."""
        if not self.own_keys:
            return self
        users = max(1, math.ceil(PAGE_SAMPLE * self.think_s / self.duration_s))
        return replace(self, users=users) if users < self.users else self

    def arrivals(self) -> Arrivals:
        """The page loads (and abuse) as arrivals: built once for every deployment replayed on
        them (a limit of thousands a second makes millions of abusive requests)."""
        return _page_arrivals(self)


@lru_cache(maxsize=2)
def _page_arrivals(traffic: PageTraffic) -> Arrivals:
    think, duration = traffic.think_s, traffic.duration_s
    model = build_model("page_load_burst", traffic.limit, traffic.window_s, traffic.seed, {
        "users": str(traffic.users), "page_size": str(traffic.page_load), "followups": "0",
        "parallel_spread_s": str(PARALLEL_SPREAD_S), "think_s": str(think), "min_think_s": str(think / 2),
        "abusers": str(traffic.abusers), "abuse_factor": str(traffic.abuse_factor), "duration_s": str(duration),
    })
    a = model.arrivals()
    keys = ["global"] * len(a) if traffic.one_key else [
        "nat" if traffic.shared_key and c == LEGIT else k for k, c in zip(a.key, a.client_class)]
    return Arrivals(a.t, a.client_id, a.client_class, keys, a.route, [traffic.cost] * len(a))


def independent(dep: Deployment, traffic: PageTraffic) -> bool:
    """Whether each client's decisions are its own whatever the others send: keys of their own on
    one store (no shared key, no requests dealt over several nodes)."""
    return dep.nodes == 1 and traffic.own_keys


def page_metric(dep: Deployment, traffic: PageTraffic, metric: str) -> float:
    """One of ``PageResult``'s figures. The legitimate users' rates of an ``independent``
    deployment are read from a replay without the abusers: their decisions are the same with them
    (the users' arrivals come first in the random stream) and an abuser at 5x a suggested limit of
    54,000 a day is 1.35 million requests that decide nothing the users see."""
    if metric != "abusive_admission" and traffic.abusers and independent(dep, traffic):
        traffic = replace(traffic, abusers=0)
    return float(getattr(page_result(dep, traffic), metric))


@dataclass(frozen=True)
class PageResult:
    legit_rejection_rate: float
    page_load_429_rate: float
    abusive_admission: float


@lru_cache(maxsize=256)
def page_result(dep: Deployment, traffic: PageTraffic) -> PageResult:
    """Read from the decisions' columns, no frame of every request: a shared key at 1,000 a
    second replays 1.6 million, nearly all the abuser's, and only its admitted ones are counted."""
    if dep.rejects_all:
        return PageResult(1.0, 1.0, 0.0)
    a, (allowed, _remaining, _retry, _reset, delay) = replayed(
        dep, (traffic.thinned() if independent(dep, traffic) else traffic).arrivals())
    classes, t = np.asarray(a.client_class, dtype=object), np.asarray(a.t, dtype=np.float64)
    legit = np.flatnonzero(classes == LEGIT)
    ids = np.asarray(a.client_id, dtype=object)[legit]
    # each user's requests together, in time order (arrivals are in time order: a stable sort by user)
    by_user = np.argsort(pd.factorize(ids)[0], kind="stable")
    legit, ids = legit[by_user], ids[by_user]
    rejected, lt = ~allowed[legit], t[legit]
    # a new page starts where a user's next request is more than the parallel spread away
    new_page = np.ones(len(legit), dtype=bool)
    new_page[1:] = (ids[1:] != ids[:-1]) | (np.diff(lt) > 2 * PARALLEL_SPREAD_S)
    page_id = np.cumsum(new_page)
    pages_hit = np.unique(page_id[rejected])
    abusive = np.flatnonzero((classes == ABUSIVE) & allowed)  # over-admission counts the admitted alone
    admitted = pd.DataFrame({
        "t": t[abusive], "key": np.asarray(a.key, dtype=object)[abusive],
        "cost": np.asarray(a.cost, dtype=np.float64)[abusive], "allowed": True, "delay_s": delay[abusive],
    })
    return PageResult(
        legit_rejection_rate=float(rejected.mean()) if len(rejected) else 0.0,
        page_load_429_rate=len(pages_hit) / max(1, int(page_id[-1]) if len(page_id) else 0),
        abusive_admission=over_admission(admitted, dep.limit, dep.window_s) if (classes == ABUSIVE).any() else 0.0,
    )


@dataclass(frozen=True)
class AttackResult:
    over_admission: float
    """Worst of the boundary burst, the edge hunt and the adversarial drip."""
    retry_after_p50_s: float
    """Median Retry-After the limiter computed for the rejected attack requests."""


OPEN_ATTACKS = ("boundary_burst", "edge_hunt")
"""The attacks replayed as their planned arrivals (no reactions)."""


@lru_cache(maxsize=256)
def attack_result(dep: Deployment, seed: int) -> AttackResult:
    if dep.rejects_all:
        return AttackResult(0.0, math.inf)
    # against no limit at all (fail-open without fallback) the drip would only measure the
    # attacker's own pacing, at a million requests; the boundary burst already shows the excess
    # the edge hunt finds the edge of a window each key's first request opens, which the clock's
    # boundary burst meets mid-window
    limits = get_algorithm(dep.algorithm).limits
    scenarios = ("boundary_burst", "edge_hunt", "adversarial_drip") if limits else ("boundary_burst",)
    hunt = {"delta_s": min(0.1, dep.window_s / 4)}  # its bursts inside half a window, however short
    frames = [run(dep, build_model(name, dep.limit, dep.window_s, seed, hunt if name == "edge_hunt" else None).arrivals()
                  if name in OPEN_ATTACKS else build_model(name, dep.limit, dep.window_s, seed))
              for name in scenarios]
    retry = np.concatenate([f.loc[~f["allowed"], "retry_after_s"].to_numpy(dtype=float) for f in frames])
    retry = retry[np.isfinite(retry)]
    return AttackResult(
        over_admission=max(over_admission(f, dep.limit, dep.window_s) for f in frames),
        retry_after_p50_s=float(np.median(retry)) if len(retry) else 0.0,
    )


@lru_cache(maxsize=64)
def rotation_admission(dep: Deployment, addresses: int, abuse_factor: float, rotate: bool, seed: int) -> float:
    """One attacker at ``abuse_factor`` x the limit's rate, cycling through ``addresses`` keys when
    ``rotate`` (IPv6 addresses of one /64, a botnet's IPs, or accounts sprayed from one IP):
    the attacker's max admitted cost in any window W, all keys together, / L."""
    rng = np.random.default_rng(seed)
    duration = 3 * dep.window_s
    n = max(1, rng.poisson(abuse_factor * dep.limit / dep.window_s * duration))
    t = np.sort(rng.uniform(0.0, duration, n))
    keys = [f"k{i % addresses}" if rotate else "k0" for i in range(n)]
    arrivals = Arrivals(t.tolist(), ["attacker"] * n, [ABUSIVE] * n, keys, ["attack"] * n, [1.0] * n)
    df = run(dep, arrivals)
    admitted = df[df["allowed"]]
    return max_window_cost(admitted["t"].to_numpy(), admitted["cost"].to_numpy(), dep.window_s) / dep.limit
