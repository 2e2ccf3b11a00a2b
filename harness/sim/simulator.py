"""The virtual-time simulator: replays a traffic model (or a recorded trace) through one
algorithm on the memory store with a virtual clock, and produces the decision log.

Exact and deterministic: the clock is the request's own time, so a run answers over-admission
and accuracy questions without any network or scheduling noise. Each run is also replayed
through ``sliding_log`` on the same arrivals to fill ``ideal_allowed``.
"""

from __future__ import annotations

import bisect
import dataclasses
import gc
import heapq
import math
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from contract.schema import DECISION_SCHEMA
from scenarios import Arrivals, Request, TrafficModel
from scenarios.fleet import Fleet, assign_nodes, fleet_of
from targets.algorithms import Algorithm, Decision, Policy, build_params, get_algorithm
from targets.algorithms.base import decided_at
from targets.config import DownstreamConfig, KeyConfig
from targets.downstream import OUTAGE
from targets.headers import reset_seconds
from targets.keys import KeyPolicy
from targets.stores.memory import MemoryStore
from targets.stores.protocol import ReplayStore
from targets.stores.redis.modes import local_params

from .cluster_store import ClusterStore

NODE, STORE = "sim", "memory"
LIVE_PEER = "127.0.0.1"
"""The peer address every request reaches a live target from (the load generator on loopback)."""


TIMING_BLOCK = 64
"""Decisions are timed in blocks of this many and each gets its block's mean: two clock reads
per decision would cost more than most decisions. Live targets time every decision."""


@dataclass
class Replay:
    """The realized arrivals (closed-loop models add follow-ups) and the decision on each."""

    arrivals: Arrivals
    decisions: list[Decision]
    decision_us: list[float]
    evictions: int
    unavailable: list[bool] | None = None
    """Per request: admitted, but answered 503 by the downstream (an outage phase of the
    model's schedule); None: no outage was scheduled."""

    @property
    def allowed(self) -> list[bool]:
        return [d[0] for d in self.decisions]


KeyOf = Callable[[Mapping[str, str]], str]


def header_keys(model: TrafficModel) -> KeyOf:
    """``headers -> key``: the ``client`` key a live target derives from a request's explicit
    headers (targets.keys, under the model's ``target_config()["keys"]``), from LIVE_PEER."""
    policy = KeyPolicy(KeyConfig.model_validate(model.target_config().get("keys", {})))
    peer = (LIVE_PEER, 0)

    def key_of(headers: Mapping[str, str]) -> str:
        scope = {"headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()],
                 "client": peer}
        return policy.identify(scope).client

    return key_of


_keyed: weakref.WeakKeyDictionary[TrafficModel, Arrivals] = weakref.WeakKeyDictionary()


def virtual_arrivals(model: TrafficModel) -> Arrivals:
    """The model's arrivals as the simulator replays them: a request with explicit headers gets
    the key the target would count it by (``header_keys``). Computed once per model."""
    arrivals = model.arrivals()
    if arrivals.headers is None:
        return arrivals
    keyed = _keyed.get(model)
    if keyed is None:
        key_of = header_keys(model)
        keys = [k if h is None else key_of(h) for k, h in zip(arrivals.key, arrivals.headers)]
        keyed = _keyed[model] = dataclasses.replace(arrivals, key=keys)
    return keyed


class Answer(NamedTuple):
    """What a closed-loop model is told instead of its admission when the downstream is down."""

    allowed: bool
    retry_after_s: float


def outage_windows(model: TrafficModel) -> list[tuple[float, float]]:
    """[start, end) of each ``outage`` phase of the downstream schedule the model's target
    config sets, in model time (live, the schedule counts from the plan's t = 0 too)."""
    schedule = model.target_config().get("downstream", {}).get("schedule")
    if not schedule:
        return []
    phases = DownstreamConfig.model_validate({"schedule": schedule}).schedule
    ends = [p.at_s for p in phases[1:]] + [math.inf]
    return [(p.at_s, end) for p, end in zip(phases, ends) if p.health == OUTAGE]


class _Outages:
    """``t -> True`` while the downstream is in an outage phase."""

    def __init__(self, windows: list[tuple[float, float]]) -> None:
        self.starts = [a for a, _ in windows]
        self.ends = [b for _, b in windows]

    def __call__(self, t: float) -> bool:
        i = bisect.bisect_right(self.starts, t) - 1
        return i >= 0 and t < self.ends[i]


def replay(model: TrafficModel, algorithm: Algorithm, params: Any, *, max_keys: int = 1_000_000,
           fleet: Fleet | None = None) -> Replay:
    """``fleet`` (default: the model's own, if any) with a local virtual store: the requests are
    dealt over N independent memory stores as the balancer would (local limits on N nodes)."""
    fleet = fleet or fleet_of(model)
    if fleet is not None and fleet.virtual_store != "shared":
        arrivals = virtual_arrivals(model)
        per_node = local_params(params, fleet.nodes) if fleet.virtual_store == "local_split" else params
        cluster = ClusterStore(algorithm, per_node, fleet.nodes, assign_nodes(arrivals.t, arrivals.client_id, fleet))
        return replay_on(cluster, model)
    return replay_on(MemoryStore(algorithm, params, max_keys=max_keys), model)


def replay_on(store: ReplayStore, traffic: TrafficModel | Arrivals) -> Replay:
    """Replay a model (or bare open-loop arrivals, keys as given) through a store: a MemoryStore,
    or several nodes behind a balancer (ClusterStore)."""
    with _no_gc():
        if not isinstance(traffic, Arrivals) and traffic.reactive:
            return _replay_general(traffic, store)
        arrivals = _decided(traffic if isinstance(traffic, Arrivals) else virtual_arrivals(traffic))
        if store.algorithm.release is not None:
            return _replay_open_releasing(arrivals, store)
        return _replay_open(arrivals, store)


@contextmanager
def _no_gc() -> Iterator[None]:
    """Millions of live decision tuples make every cyclic-GC pass longer; none of them can form
    a cycle, so collection is paused for the replay."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _replay_open(arrivals: Arrivals, store: ReplayStore) -> Replay:
    """Hot path for open-loop traffic: blocks of decisions through the store's batch call."""
    decide_many, clock = store.decide_many, time.perf_counter_ns
    ts, keys, costs = arrivals.t, arrivals.key, arrivals.cost
    decisions: list[Decision] = []
    micros: list[float] = []
    for first in range(0, len(ts), TIMING_BLOCK):
        last = first + TIMING_BLOCK
        start = clock()
        block = decide_many(keys[first:last], ts[first:last], costs[first:last])
        micros.extend([(clock() - start) / 1000.0 / len(block)] * len(block))
        decisions.extend(block)
    return Replay(arrivals, decisions, micros, store.evictions)


def _replay_open_releasing(arrivals: Arrivals, store: ReplayStore) -> Replay:
    """Open-loop traffic through a concurrency limiter: the arrivals stay columns; the virtual
    completions that give the slots back wait in a FIFO."""
    decide, releases, clock = store.decide, _Releases(store), time.perf_counter_ns
    due, schedule, until = releases.due, releases.schedule, releases.until
    ts, keys, costs = arrivals.t, arrivals.key, arrivals.cost
    decisions: list[Decision] = []
    append = decisions.append
    micros: list[float] = []
    for first in range(0, len(ts), TIMING_BLOCK):
        last = first + TIMING_BLOCK
        start = clock()
        for t, key, cost in zip(ts[first:last], keys[first:last], costs[first:last]):
            if due and due[0][0] <= t:
                until(t)
            d = decide(key, t, cost)
            if d[0]:
                schedule(t + d[4], key, cost)
            append(d)
        count = len(ts[first:last])
        micros.extend([(clock() - start) / 1000.0 / count] * count)  # block mean, releases included
    return Replay(arrivals, decisions, micros, store.evictions)


def _replay_general(model: TrafficModel, store: ReplayStore) -> Replay:
    """Closed-loop traffic, one request at a time: planned arrivals are merged with each
    decision's follow-ups (a heap), and virtual completions release slots. A request admitted
    during a scheduled downstream outage is answered 503: the model reacts to a refusal whose
    hint is the RateLimit field's ``t`` of that answer (a 503 has no Retry-After)."""
    model.reset()
    planned = virtual_arrivals(model).requests()
    key_of = header_keys(model) if model.arrivals().headers is not None else None
    windows = outage_windows(model)
    down = _Outages(windows) if windows else None
    unavailable: list[bool] = []
    heap: list[tuple[float, int, Request]] = []
    seq = 0
    done: list[Request] = []
    decisions: list[Decision] = []
    micros: list[float] = []
    releases = _Releases(store)
    clock = time.perf_counter_ns
    nxt = next(planned, None)
    while nxt is not None or heap:
        if heap and (nxt is None or heap[0][0] < nxt[0]):
            req = heapq.heappop(heap)[2]
        else:
            req = nxt
            nxt = next(planned, None)
        if releases.pending:
            releases.until(req.t)
        start = clock()
        d = store.decide(req.key, req.t, req.cost)
        micros.append((clock() - start) / 1000.0)
        done.append(req)
        decisions.append(d)
        if d.allowed and releases.enabled:
            releases.schedule(req.t + d.delay_s, req.key, req.cost)
        answer: Decision | Answer = d
        if down is not None:
            failed = d.allowed and down(req.t)
            unavailable.append(failed)
            if failed:
                answer = Answer(False, float(reset_seconds(d.reset_s)))
        for follow in model.react(req, answer):
            if key_of is not None and follow.headers is not None and follow.headers is not req.headers:
                follow = follow._replace(key=key_of(follow.headers))
            heapq.heappush(heap, (follow.t, seq, follow))
            seq += 1
    return Replay(_decided(Arrivals.from_requests(done)), decisions, micros, store.evictions,
                  unavailable if down is not None else None)


def _decided(arrivals: Arrivals) -> Arrivals:
    """The arrivals at the whole µs the algorithms decide at (``decided_at``): the decisions are
    the same, and the log's times are the decided ones, so its over-admission is measured on the
    times the limiter saw (two requests W - 0.3 µs apart are W apart to it)."""
    return dataclasses.replace(arrivals, t=decided_at(np.asarray(arrivals.t, dtype=np.float64)).tolist())


class _Releases:
    """Virtual completions for concurrency limiters: each admitted request holds its slots for
    the algorithm's ``hold_s`` (a stand-in for service time). Decisions come in time order and
    the hold is constant, so completions are due in admission order: a FIFO, not a heap."""

    def __init__(self, store: ReplayStore) -> None:
        self.store = store
        self.enabled = store.algorithm.release is not None
        self.hold_s = getattr(store.params, "hold_s", 0.0)
        self.due: deque[tuple[float, str, float]] = deque()

    @property
    def pending(self) -> bool:
        return bool(self.due)

    def schedule(self, t: float, key: str, cost: float) -> None:
        self.due.append((t + self.hold_s, key, cost))

    def until(self, now: float) -> None:
        due, release = self.due, self.store.release
        while due and due[0][0] <= now:
            t, key, cost = due.popleft()
            release(key, t, cost)


def ideal_decisions(arrivals: Arrivals, policy: Policy) -> list[bool]:
    """sliding_log (the exact reference) on the same arrivals."""
    algorithm = get_algorithm("sliding_log")
    store = MemoryStore(algorithm, build_params("sliding_log", policy), max_keys=max(1, len(arrivals)))
    with _no_gc():
        return [d[0] for d in store.decide_many(arrivals.key, arrivals.t, arrivals.cost)]


def decision_table(result: Replay, algorithm: str, ideal: list[bool], limit_name: str = "default") -> pa.Table:
    """The decision log (contract.schema.DECISION_SCHEMA) of one simulated run."""
    a = result.arrivals
    n = len(a)
    allowed, remaining, retry_after, _reset, delay = zip(*result.decisions) if n else ((),) * 5

    def constant(value: str) -> pa.Array:
        return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)), pa.array([value])).cast(pa.string())

    columns = {
        "t": pa.array(a.t, pa.float64()),
        "node": constant(NODE),
        "algorithm": constant(algorithm),
        "store": constant(STORE),
        "limit_name": constant(limit_name),
        "key": pa.array(a.key, pa.string()),
        "cost": pa.array(a.cost, pa.float64()),
        "allowed": pa.array(allowed, pa.bool_()),
        "remaining": pa.array(remaining, pa.float64()),
        "retry_after_s": pa.array(retry_after, pa.float64()),
        "decision_us": pa.array(result.decision_us, pa.float64()),
        "client_class": pa.array(a.client_class, pa.string()),
        "request_id": pa.array(np.arange(n)).cast(pa.string()),
        "client_id": pa.array(a.client_id, pa.string()),
        "route": pa.array(a.route, pa.string()),
        "delay_s": pa.array(delay, pa.float64()),
        "ideal_allowed": pa.array(ideal, pa.bool_()),
        "source": constant(STORE),
        "adaptive_limit": pa.nulls(n, pa.float64()),
        "arrived_t": pa.array(a.t, pa.float64()),
    }
    return pa.Table.from_pydict(columns, schema=DECISION_SCHEMA)


def simulate(model: TrafficModel, algorithm_name: str, policy: Policy, params: Any,
             *, max_keys: int = 1_000_000, ideal: list[bool] | None = None,
             fleet: Fleet | None = None) -> tuple[pa.Table, Replay]:
    """One run: replay, the ideal replay (unless given: for an open-loop model it is the same
    for every algorithm), and the decision log."""
    algorithm = get_algorithm(algorithm_name)
    result = replay(model, algorithm, params, max_keys=max_keys, fleet=fleet)
    if ideal is None:
        is_reference = algorithm_name == "sliding_log" and params == build_params("sliding_log", policy)
        ideal = result.allowed if is_reference else ideal_decisions(result.arrivals, policy)
    return decision_table(result, algorithm_name, ideal), result
