"""`validate --traffic LOG`: whom each candidate policy would have refused, had it been live
when the log was written.

Every policy's limits are replayed on the log's requests in time order as the target's layered
check decides them (``layered_replay``), with the deployment the checks simulate
(``sim.deployment``: the policy's store, nodes and divisions): on Redis each limit spends in
turn, so a request refused by a later limit has spent its cost in the earlier ones; in memory
a request refused by any limit spends nothing anywhere.

A log with whole-second times cannot order the requests of one second: each policy is then
judged twice, with each second's requests spread evenly over it and packed at its start, and
the two answers are the bounds.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import re
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from analysis.metrics import max_window_cost
from contract.lifetime import die_with_parent
from harness.campaign.key_classes import OTHER, KeyClass
from harness.campaign.log_traffic import LogTraffic
from harness.campaign.policy_file import Limit, PolicyFile

from .layered_replay import Keyed, Requests, in_turn, together
from .sim import deployment

TOP_KEYS = 10
TIME_BINS = (1, 10, 60, 300, 900, 3600, 21600, 86400)
"""Chart bin widths (s): the smallest that gives at most ~120 bins over the log's span."""


@dataclass(frozen=True)
class RouteRow:
    route: str
    requests: int
    refused: int


@dataclass(frozen=True)
class KeyRow:
    key: str
    requests: int
    refused: int
    worst: float
    """The most cost this key sent in any ``span_s`` to the routes of ``limit`` (the limit that
    refused it most), against ``allowance``, what the limit admits in that span."""
    span_s: float
    allowance: float
    limit: str

    @property
    def burst(self) -> str:
        return f"{self.worst:,.0f} in {self.span_s:g} s vs {self.allowance:,.0f} ({self.limit})"


@dataclass(frozen=True)
class ClassRow:
    name: str
    requests: int
    refused: int
    max_refused: float | None

    @property
    def share(self) -> float:
        return self.refused / self.requests if self.requests else 0.0

    @property
    def passed(self) -> bool:
        return self.max_refused is None or self.share <= self.max_refused


@dataclass(frozen=True)
class Outcome:
    """One policy judged on the log under one timing (``exact``, or the bounds ``spread`` and ``packed``)."""

    policy: str
    timing: str
    requests: int
    refused: int
    keys: int
    keys_refused: int
    by_route: list[RouteRow]
    bin_s: int
    bin_start: float
    requests_per_bin: list[int]
    refused_per_bin: list[int]
    top_keys: list[KeyRow]
    classes: list[ClassRow] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.classes)


class _Keys:
    """The log's keys under one limit kind: a code per request and the key text per code."""

    def __init__(self, traffic: LogTraffic, policy: PolicyFile, limit: Limit) -> None:
        by_identity = traffic.keys(*_keyed_alike(policy, limit))
        self.names, codes = np.unique(by_identity.astype(str), return_inverse=True)
        self.code = codes.astype(np.int32)[traffic.identity]


def _keyed_alike(policy: PolicyFile, limit: Limit) -> tuple[str, int, int]:
    """What decides a limit's keys: its kind, the trusted hops and the IPv6 prefix."""
    return limit.key, policy.keys.trusted_proxies or 0, policy.keys.ipv6_prefix or 128


def keys_by_limit(traffic: LogTraffic, policies: list[PolicyFile]) -> dict[str, list[_Keys]]:
    """Each policy's keys, limit by limit; limits keyed alike share one (a code per request each:
    20 MB for five million requests)."""
    made: dict[tuple[str, int, int], _Keys] = {}
    for policy in policies:
        for limit in policy.limits:
            if _keyed_alike(policy, limit) not in made:
                made[_keyed_alike(policy, limit)] = _Keys(traffic, policy, limit)
    return {policy.name: [made[_keyed_alike(policy, limit)] for limit in policy.limits] for policy in policies}


def route_costs(traffic: LogTraffic, policy: PolicyFile) -> np.ndarray:
    """Each route code's cost: the route's in the policy, 1 for a route the policy does not list."""
    listed = {r.name: r.cost for r in policy.routes}
    return np.array([listed.get(r, 1.0) for r in traffic.routes], dtype=np.float64)


def refusals(traffic: LogTraffic, policy: PolicyFile, t: np.ndarray, keys: list[_Keys]) -> np.ndarray:
    """Per request: the index of the limit that refused it, -1 if admitted, as the target's
    layered check decides (``layered_replay``: Redis limits in turn, memory limits together)."""
    covers = np.array([[limit.covers(r) for limit in policy.limits] for r in traffic.routes], dtype=bool)
    covers = covers.reshape(len(traffic.routes), len(policy.limits))
    requests = Requests(t, traffic.route, route_costs(traffic, policy), covers)
    deps = [deployment(policy, limit) for limit in policy.limits]
    keyed = [Keyed(k.code, dep.nodes) for k, dep in zip(keys, deps)]
    met = np.bincount(traffic.route, minlength=len(traffic.routes)) > 0
    if policy.store.effective_mode == "local" and np.any(covers[met].sum(axis=1) > 1):
        return together(deps, keyed, requests)
    return in_turn(deps, keyed, requests)


def timings(traffic: LogTraffic) -> list[tuple[str, np.ndarray]]:
    if traffic.whole_second:
        return [("spread", traffic.spread_t), ("packed", traffic.t)]
    return [("exact", traffic.t)]


def judge(traffic: LogTraffic, policies: list[PolicyFile],
          classes: list[tuple[KeyClass, re.Pattern[str]]] | None = None) -> list[Outcome]:
    """Every policy under every timing the log allows."""
    keys = keys_by_limit(traffic, policies)
    jobs = [(policy, timing, t) for policy in policies for timing, t in timings(traffic)]
    refused = all_refusals(traffic, [(policy, t, keys[policy.name]) for policy, _, t in jobs])
    klass = {policy.name: classify(traffic, keys[policy.name][0], classes or []) for policy in policies}
    return [outcome(traffic, policy, timing, t, refused_by, keys[policy.name][0], klass[policy.name], classes or [])
            for (policy, timing, t), refused_by in zip(jobs, refused)]


PARALLEL_FROM = 200_000
"""Requests from which the replays run in worker processes, one per core (each replay is one
Python loop: a core each is the only way to more than one core's decisions per second)."""
_SHARED: tuple[LogTraffic, list[tuple[PolicyFile, np.ndarray, list[_Keys]]]] | None = None
"""What forked workers read (inherited copy-on-write: the log's columns are not pickled)."""


def _replay_job(index: int) -> np.ndarray:
    assert _SHARED is not None
    traffic, jobs = _SHARED
    return refusals(traffic, *jobs[index])


def all_refusals(traffic: LogTraffic, jobs: list[tuple[PolicyFile, np.ndarray, list[_Keys]]]) -> list[np.ndarray]:
    """``refusals`` of every (policy, times, keys), in worker processes for a big log."""
    global _SHARED
    workers = min(len(jobs), os.cpu_count() or 1)
    if workers < 2 or len(traffic.t) < PARALLEL_FROM or "fork" not in mp.get_all_start_methods():
        return [refusals(traffic, *job) for job in jobs]
    _SHARED = (traffic, jobs)
    try:
        with ProcessPoolExecutor(workers, mp_context=mp.get_context("fork"),  # no orphan if we are killed
                                 initializer=die_with_parent, initargs=(os.getpid(),)) as pool:
            return list(pool.map(_replay_job, range(len(jobs))))
    finally:
        _SHARED = None


def classify(traffic: LogTraffic, keys: _Keys, classes: list[tuple[KeyClass, re.Pattern[str]]]) -> np.ndarray:
    """Per request, the index of the first class whose regex its key (or user agent) matches;
    len(classes) = ``other``."""
    index = np.full(len(traffic.t), len(classes), dtype=np.int32)
    for i in reversed(range(len(classes))):
        spec, pattern = classes[i]
        if spec.key is not None:
            hit = np.array([pattern.search(k) is not None for k in keys.names], dtype=bool)[keys.code]
        else:
            hit = np.array([pattern.search(a) is not None for a in traffic.agents], dtype=bool)[traffic.agent]
        index[hit] = i
    return index


def outcome(traffic: LogTraffic, policy: PolicyFile, timing: str, t: np.ndarray, refused_by: np.ndarray,
            keys: _Keys, klass: np.ndarray, classes: list[tuple[KeyClass, re.Pattern[str]]]) -> Outcome:
    refused = refused_by >= 0
    nkeys = len(keys.names)
    per_key = np.bincount(keys.code, minlength=nkeys)
    refused_per_key = np.bincount(keys.code[refused], minlength=nkeys)
    per_route = np.bincount(traffic.route, minlength=len(traffic.routes))
    refused_route = np.bincount(traffic.route[refused], minlength=len(traffic.routes))
    by_route = sorted((RouteRow(r, int(n), int(x)) for r, n, x in zip(traffic.routes, per_route, refused_route)),
                      key=lambda row: (-row.refused, -row.requests, row.route))
    bin_s, start, requests_bins, refused_bins = over_time(t, refused)
    names = [c.name for c, _ in classes] + [OTHER]
    limits = [c.max_refused for c, _ in classes] + [None]
    per_class = np.bincount(klass, minlength=len(names))
    refused_class = np.bincount(klass[refused], minlength=len(names))
    class_rows = [ClassRow(n, int(r), int(x), m) for n, r, x, m in zip(names, per_class, refused_class, limits) if r]
    return Outcome(policy.name, timing, len(t), int(refused.sum()), nkeys, int((refused_per_key > 0).sum()),
                   by_route, bin_s, start, requests_bins, refused_bins,
                   top_keys(traffic, policy, t, refused_by, keys, per_key, refused_per_key), class_rows if classes else [])


def over_time(t: np.ndarray, refused: np.ndarray) -> tuple[int, float, list[int], list[int]]:
    if not len(t):
        return 1, 0.0, [], []
    span = float(t[-1] - t[0])
    bin_s = next((b for b in TIME_BINS if span / b <= 120), TIME_BINS[-1])
    start = float(np.floor(t[0] / bin_s) * bin_s)
    index = ((t - start) // bin_s).astype(np.int64)
    n = int(index[-1]) + 1
    return bin_s, start, np.bincount(index, minlength=n).tolist(), np.bincount(index[refused], minlength=n).tolist()


def top_keys(traffic: LogTraffic, policy: PolicyFile, t: np.ndarray, refused_by: np.ndarray, keys: _Keys,
             per_key: np.ndarray, refused_per_key: np.ndarray) -> list[KeyRow]:
    """The keys with the most refused requests, each with its worst burst against the limit that
    refused it most: why it was refused."""
    cost = route_costs(traffic, policy)
    order = np.lexsort((-per_key, -refused_per_key))
    rows = []
    for code in order[:TOP_KEYS]:
        if refused_per_key[code] == 0:
            break
        mine = keys.code == code
        limit = policy.limits[int(np.bincount(refused_by[mine & (refused_by >= 0)]).argmax())]
        span, allowance = burst_span(limit)
        covered = mine & np.array([limit.covers(r) for r in traffic.routes], dtype=bool)[traffic.route]
        worst = max_window_cost(t[covered], cost[traffic.route[covered]], span)
        rows.append(KeyRow(str(keys.names[code]), int(per_key[code]), int(refused_per_key[code]),
                           float(worst), span, allowance, limit.name))
    return rows


def burst_span(limit: Limit) -> tuple[float, float]:
    """The interval a key's burst is measured over and what the limit allows in it: the time
    the burst allowance takes to refill at the limit's rate (capped at its window), or the window
    and L for a limit without one."""
    if limit.burst is None or limit.burst >= limit.limit:
        return limit.window_s, limit.limit
    return limit.burst * limit.window_s / limit.limit, limit.burst
