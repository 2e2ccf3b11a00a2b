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

The log comes a block at a time, in time order, from disk (``LogTraffic.blocks``): each replay
carries its limits' states from block to block and sums what the report needs (``replay_sums``),
and a second pass measures the worst bursts of the keys refused most. Nothing request-sized is
held, so a log of any size is judged in the same memory.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import re
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from contract.lifetime import die_with_parent
from harness.campaign.key_classes import OTHER, KeyClass
from harness.campaign.log_traffic import LogTraffic
from harness.campaign.policy_file import Limit, PolicyFile
from harness.campaign.request_records import spread

from .layered_replay import Keyed, Requests, Table, in_turn, together
from .replay_sums import Bins, Sweep, Tally
from .sim import deployment

TOP_KEYS = 10


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
    """The log's keys under one limit kind: the key text per code, and each identity's code."""

    def __init__(self, traffic: LogTraffic, policy: PolicyFile, limit: Limit) -> None:
        by_identity = traffic.keys(*_keyed_alike(policy, limit))
        self.names, codes = np.unique(by_identity.astype(str), return_inverse=True)
        self.of_identity = codes.astype(np.int32)


def _keyed_alike(policy: PolicyFile, limit: Limit) -> tuple[str, int, int]:
    """What decides a limit's keys: its kind, the trusted hops and the IPv6 prefix."""
    return limit.key, policy.keys.trusted_proxies or 0, policy.keys.ipv6_prefix or 128


def keys_by_limit(traffic: LogTraffic, policies: list[PolicyFile]) -> dict[str, list[_Keys]]:
    """Each policy's keys, limit by limit; limits keyed alike share one."""
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


def _covered(traffic: LogTraffic, limit: Limit) -> np.ndarray:
    """Per route code: the limit covers it."""
    return np.array([limit.covers(r) for r in traffic.routes], dtype=bool)


class PolicyReplay:
    """One policy's decisions on the log, block after block, as the target's layered check makes
    them (``layered_replay``: Redis limits in turn, memory limits together); its limits' states
    carried from one block to the next."""

    def __init__(self, traffic: LogTraffic, policy: PolicyFile, keys: list[_Keys]) -> None:
        covers = np.stack([_covered(traffic, limit) for limit in policy.limits], axis=1) if traffic.routes \
            else np.zeros((0, len(policy.limits)), dtype=bool)
        self.covers, self.cost, self.keys = covers, route_costs(traffic, policy), keys
        deps = [deployment(policy, limit) for limit in policy.limits]
        self.tables, self.nodes = [Table.of(dep) for dep in deps], [dep.nodes for dep in deps]
        met = traffic.route_counts > 0
        self.decide_together = policy.store.effective_mode == "local" and bool(np.any(covers[met].sum(axis=1) > 1))

    def decide(self, first: int, t: np.ndarray, identity: np.ndarray, route: np.ndarray) -> np.ndarray:
        """Per request of the block at log position ``first``: the index of the limit that refused it, -1 if admitted."""
        keyed = [Keyed(k.of_identity[identity], nodes, first) for k, nodes in zip(self.keys, self.nodes)]
        requests = Requests(t, route, self.cost, self.covers)
        return (together if self.decide_together else in_turn)(self.tables, keyed, requests)


def timings(traffic: LogTraffic) -> list[str]:
    return ["spread", "packed"] if traffic.whole_second else ["exact"]


def _times(block: np.ndarray, timing: str) -> np.ndarray:
    return spread(block["t"]) if timing == "spread" else block["t"]


def refusals(traffic: LogTraffic, policy: PolicyFile, timing: str = "exact") -> np.ndarray:
    """Per request in time order: the index of the limit that refused it, -1 if admitted."""
    replay = PolicyReplay(traffic, policy, [_Keys(traffic, policy, limit) for limit in policy.limits])
    decided = [replay.decide(first, _times(block, timing), block["identity"], block["route"])
               for first, block in traffic.blocks()]
    return np.concatenate(decided) if decided else np.empty(0, dtype=np.int16)


def judge(traffic: LogTraffic, policies: list[PolicyFile],
          classes: list[tuple[KeyClass, re.Pattern[str]]] | None = None) -> list[Outcome]:
    """Every policy under every timing the log allows, in worker processes for a big log."""
    global _SHARED
    keys = keys_by_limit(traffic, policies)
    jobs = [(policy, timing, keys[policy.name], classes or []) for policy in policies for timing in timings(traffic)]
    workers = min(len(jobs), os.cpu_count() or 1)
    if workers < 2 or traffic.requests < PARALLEL_FROM or "fork" not in mp.get_all_start_methods():
        return [judge_one(traffic, *job) for job in jobs]
    _SHARED = (traffic, jobs)
    try:
        with ProcessPoolExecutor(workers, mp_context=mp.get_context("fork"),  # no orphan if we are killed
                                 initializer=die_with_parent, initargs=(os.getpid(),)) as pool:
            return list(pool.map(_judge_job, range(len(jobs))))
    finally:
        _SHARED = None


PARALLEL_FROM = 200_000
"""Requests from which the replays run in worker processes, one per core (each replay is one
Python loop: a core each is the only way to more than one core's decisions per second)."""
_Job = tuple[PolicyFile, str, list[_Keys], list[tuple[KeyClass, re.Pattern[str]]]]
_SHARED: tuple[LogTraffic, list[_Job]] | None = None
"""What forked workers read (inherited: the log's file is shared, read by position)."""


def _judge_job(index: int) -> Outcome:
    assert _SHARED is not None
    traffic, jobs = _SHARED
    return judge_one(traffic, *jobs[index])


def judge_one(traffic: LogTraffic, policy: PolicyFile, timing: str, keys: list[_Keys],
              classes: list[tuple[KeyClass, re.Pattern[str]]]) -> Outcome:
    """One policy under one timing: the replay and its sums in one pass over the log, the top
    keys' worst bursts in a second."""
    replay = PolicyReplay(traffic, policy, keys)
    key_class, agent_class = class_lookups(traffic, keys[0], classes)
    tally = Tally(len(keys[0].names), len(policy.limits), len(traffic.routes), len(classes) + 1,
                  Bins(traffic.first_t, traffic.last_t + (1.0 if timing == "spread" else 0.0)))
    for first, block in traffic.blocks():
        t = _times(block, timing)
        refused_by = replay.decide(first, t, block["identity"], block["route"])
        code = keys[0].of_identity[block["identity"]]
        tally.add(t, code, block["route"], np.minimum(key_class[code], agent_class[block["agent"]]), refused_by)
    names = [c.name for c, _ in classes] + [OTHER]
    limits = [c.max_refused for c, _ in classes] + [None]
    class_rows = [ClassRow(n, int(r), int(x), m) for n, r, x, m in zip(names, tally.per_class, tally.refused_class, limits)
                  if r]
    by_route = sorted((RouteRow(r, int(n), int(x)) for r, n, x in zip(traffic.routes, tally.per_route, tally.refused_route)),
                      key=lambda row: (-row.refused, -row.requests, row.route))
    bin_s, start, requests_bins, refused_bins = tally.bins.result()
    return Outcome(policy.name, timing, tally.requests, tally.refused, len(keys[0].names),
                   int((tally.refused_per_key > 0).sum()), by_route, bin_s, start, requests_bins, refused_bins,
                   top_keys(traffic, policy, timing, keys[0], tally), class_rows if classes else [])


def class_lookups(traffic: LogTraffic, keys: _Keys, classes: list[tuple[KeyClass, re.Pattern[str]]]
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Per key code and per agent code, the index of the first class whose regex the key (or the
    user agent) matches, len(classes) (``other``) for none: a request's class is the lower of its
    key's and its agent's."""
    by_key = np.full(len(keys.names), len(classes), dtype=np.int32)
    by_agent = np.full(len(traffic.agents), len(classes), dtype=np.int32)
    for i in reversed(range(len(classes))):
        spec, pattern = classes[i]
        if spec.key is not None:
            by_key[np.array([pattern.search(k) is not None for k in keys.names], dtype=bool)] = i
        else:
            by_agent[np.array([pattern.search(a) is not None for a in traffic.agents], dtype=bool)] = i
    return by_key, by_agent


def top_keys(traffic: LogTraffic, policy: PolicyFile, timing: str, keys: _Keys, tally: Tally) -> list[KeyRow]:
    """The keys with the most refused requests, each with its worst burst against the limit that
    refused it most (why it was refused), measured in one more pass over the log."""
    refused = tally.refused_per_key
    order = np.lexsort((-tally.per_key, -refused))
    chosen = [int(code) for code in order[:TOP_KEYS] if refused[code] > 0]
    if not chosen:
        return []
    limits = [policy.limits[int(tally.refused_by_limit[:, code].argmax())] for code in chosen]
    sweeps = [Sweep(burst_span(limit)[0]) for limit in limits]
    covered = [_covered(traffic, limit) for limit in limits]
    cost = route_costs(traffic, policy)
    wanted = np.array(chosen)
    for _, block in traffic.blocks():
        code = keys.of_identity[block["identity"]]
        hit = np.isin(code, wanted)
        if not hit.any():
            continue
        t, code, route = _times(block, timing)[hit], code[hit], block["route"][hit]
        for key, sweep, covers in zip(chosen, sweeps, covered):
            mine = (code == key) & covers[route]
            sweep.add(t[mine], cost[route[mine]])
    return [KeyRow(str(keys.names[code]), int(tally.per_key[code]), int(refused[code]),
                   sweep.worst, sweep.span, burst_span(limit)[1], limit.name)
            for code, sweep, limit in zip(chosen, sweeps, limits)]


def burst_span(limit: Limit) -> tuple[float, float]:
    """The interval a key's burst is measured over and what the limit allows in it: the time
    the burst allowance takes to refill at the limit's rate (capped at its window), or the window
    and L for a limit without one."""
    if limit.burst is None or limit.burst >= limit.limit:
        return limit.window_s, limit.limit
    return limit.burst * limit.window_s / limit.limit, limit.burst
