"""The virtual-time simulator: replays a traffic model (or a recorded trace) through one
algorithm on the memory store with a virtual clock, and produces the decision log.

Exact and deterministic: the clock is the request's own time, so a run answers over-admission
and accuracy questions without any network or scheduling noise. Each run is also replayed
through ``sliding_log`` on the same arrivals to fill ``ideal_allowed``.
"""

from __future__ import annotations

import dataclasses
import gc
import heapq
import math
import time
import weakref
from array import array
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa

from contract.schema import CLIENT_SCHEMA, DECISION_SCHEMA, ROLE_PLAN
from scenarios import Arrivals, Request, TrafficModel
from scenarios.fleet import Fleet, assign_nodes
from targets.algorithms import Algorithm, Decision, Policy, build_params, get_algorithm
from targets.algorithms.adaptive_rules import Reading
from targets.algorithms.base import decided_at
from targets.config import DownstreamConfig, KeyConfig
from targets.downstream import OUTAGE
from targets.headers import reset_seconds
from targets.keys import KeyPolicy
from targets.stores.memory import MemoryStore
from targets.stores.protocol import InspectableStore, LearningStore, ReplayStore
from targets.stores.redis.modes import local_params

from .cluster_store import ClusterStore
from .decision_columns import DecisionColumns
from .event_loop import Feedback, run_planned
from .gateway_store import Gateway
from .system import UNAVAILABLE_STATUS, Path, Served, SystemSpec, serve_open, system_for

NODE, STORE = "sim", "memory"
NONE = "none"
"""The algorithm that admits everything and keeps no state: its replay needs no decision call."""
READING_S = 0.25
"""Model seconds between CPU/load readings (the live target's sampler: targets/readings.py)."""
GLOBAL_KEY = "global"
"""The one key of a limiter that guards the downstream as a whole (adaptive: scope ``global`` live)."""
LIVE_PEER = "127.0.0.1"
"""The peer address every request reaches a live target from (the load generator on loopback)."""


TIMING_BLOCK = 64
"""Decisions are timed in blocks of this many and each gets its block's mean: two clock reads
per decision would cost more than most decisions. Live targets time every decision."""

PART_ROWS = 250_000
"""Rows of a log built (and written) at a time: a whole decision log at once would hold ~200
bytes a request in Arrow buffers beside the replay."""


@dataclass
class Replay:
    """The realized arrivals (closed-loop models add follow-ups) and the decision on each."""

    arrivals: Arrivals
    decisions: list[Decision] | DecisionColumns
    decision_us: Sequence[float]
    evictions: int
    unavailable: list[bool] | None = None
    """Per request: admitted, but answered 503 by the downstream (an outage phase of the
    model's schedule); None: no outage was scheduled."""
    served: Served | None = None
    """What the system model did with each request (client times, status, target work)."""
    limits: Sequence[float] | None = None
    """An observing limiter's limit after each decision (the log's ``adaptive_limit``)."""
    limit_names: Sequence[str] | None = None
    """Per decision, the limit that refused it, else the innermost that admitted (a gateway in
    front: the log's ``limit_name``); None: one limit decided everything."""

    @property
    def allowed(self) -> list[bool]:
        if isinstance(self.decisions, DecisionColumns):
            return self.decisions.column("allowed").tolist()
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


def replay(model: TrafficModel, algorithm: Algorithm, params: Any, *, max_keys: int = 1_000_000,
           fleet: Fleet | None = None, system: SystemSpec | None = None, gateway: Gateway | None = None) -> Replay:
    """``fleet`` (default: the model's own, if any) with a local virtual store: the requests are
    dealt over N independent memory stores as the balancer would (local limits on N nodes).
    ``system``: the path around the limiter (harness/sim/system.py); limiters that hold or
    observe, and closed-loop models, always run through one (by default the model's).
    ``gateway``: a token bucket in front of the limiter (harness/sim/gateway_store.py)."""
    if gateway is not None:
        store = gateway.over(MemoryStore(algorithm, params, max_keys=max_keys))
        result = replay_on(store, model, system)
        result.limit_names = store.limit_names()
        return result
    fleet = fleet or model.fleet()
    if fleet is not None and fleet.virtual_store != "shared":
        arrivals = virtual_arrivals(model)
        per_node = local_params(params, fleet.nodes) if fleet.virtual_store == "local_split" else params
        cluster = ClusterStore(algorithm, per_node, fleet.nodes, assign_nodes(arrivals.t, arrivals.client_id, fleet))
        return replay_on(cluster, model, system)
    return replay_on(MemoryStore(algorithm, params, max_keys=max_keys), model, system)


def replay_on(store: ReplayStore, traffic: TrafficModel | Arrivals, system: SystemSpec | None = None) -> Replay:
    """Replay a model (or bare open-loop arrivals, keys as given) through a store: a MemoryStore,
    or several nodes behind a balancer (ClusterStore). Decisions that depend on answers (a
    closed-loop model, a limiter that holds or observes) go through the event loop; the others
    through the fast path, then (with ``system``) the system model over the whole columns."""
    algorithm = store.algorithm
    model = None if isinstance(traffic, Arrivals) else traffic
    with _no_gc():
        if (model is not None and model.reactive) or algorithm.release is not None or algorithm.observe is not None:
            spec = system or (system_for(model, algorithm.name) if model is not None else SystemSpec(DownstreamConfig()))
            return _replay_events(traffic, store, spec)
        arrivals = _decided(traffic if model is None else virtual_arrivals(model))
        result = _replay_open(arrivals, store)
        if system is not None:
            allowed, delay = _columns(result.decisions)
            result.served = serve_open(system, np.asarray(arrivals.t), arrivals.client_id, allowed, delay)
        return result


def _columns(decisions: list[Decision] | DecisionColumns) -> tuple[np.ndarray, np.ndarray]:
    """(allowed, delay_s) of the decisions as numpy columns."""
    columns = DecisionColumns.of(decisions)
    return columns[0], columns[4]


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
    """Hot path for open-loop traffic: blocks of decisions through the store's batch call;
    ``none`` (the same decision for every request, no state kept) without a call at all."""
    if store.algorithm.name == NONE:
        start = time.perf_counter_ns()
        decisions = DecisionColumns.repeated(store.algorithm.decide(None, 0.0, 1.0, None)[0], len(arrivals))
        micros = np.full(len(arrivals), (time.perf_counter_ns() - start) / 1000.0 / max(1, len(arrivals)))
        return Replay(arrivals, decisions, micros, store.evictions)
    decide_many, clock = store.decide_many, time.perf_counter_ns
    ts, keys, costs = arrivals.t, arrivals.key, arrivals.cost
    decisions = DecisionColumns()
    micros = array("d")
    for first in range(0, len(ts), TIMING_BLOCK):
        last = first + TIMING_BLOCK
        start = clock()
        block = decide_many(keys[first:last], ts[first:last], costs[first:last])
        micros.extend([(clock() - start) / 1000.0 / len(block)] * len(block))
        decisions.extend(block)
    return Replay(arrivals, decisions, micros, store.evictions)


def _planned(traffic: TrafficModel | Arrivals) -> Arrivals:
    """The arrivals ``_requests`` yields, as columns."""
    return traffic if isinstance(traffic, Arrivals) else virtual_arrivals(traffic)


def _replay_events(traffic: TrafficModel | Arrivals, store: ReplayStore, spec: SystemSpec) -> Replay:
    """The event loop: the simulated completions give slots back and feed latency samples to an
    observing limiter before each decision, and the CPU readings due reach a limiter that reads
    them. Planned traffic goes through harness/sim/event_loop.py; a closed-loop model through
    ``_replay_reactive``, which also sends each follow-up when its answer reached the client. A
    limiter that observes guards the downstream as a whole (one key, as live: its limit's scope
    is ``global``)."""
    model = None if isinstance(traffic, Arrivals) else traffic
    if model is not None:
        model.reset()  # a plan replays one model for every algorithm: each meets the same clients
        if model.reactive:
            return _replay_reactive(model, store, spec)
    arrivals = _decided(_planned(traffic))  # at the decided µs, as the open path: the same client log
    loop = run_planned(arrivals, store, spec, _feedback(store, spec))
    return Replay(arrivals, loop.decisions, loop.decision_us, store.evictions, _failed(loop.served, spec), loop.served,
                  loop.limits or None)


def _feedback(store: ReplayStore, spec: SystemSpec) -> Feedback:
    observes, holds = store.algorithm.observe is not None, store.algorithm.release is not None
    readings = _Readings(store, spec)
    return Feedback(_finisher(store) if holds or observes else None, readings.due, readings.until,
                    _limit_at(store) if observes else None, GLOBAL_KEY if observes else None)


def _replay_reactive(model: TrafficModel, store: ReplayStore, spec: SystemSpec) -> Replay:
    """The event loop of a closed-loop model, one request at a time: planned arrivals merged with
    the follow-ups (a heap, each sent when its answer reached the client), the completions (a
    heap) before each decision."""
    planned = _decided(_planned(model)).requests()
    key_of = header_keys(model) if model.arrivals().headers is not None else None
    feedback, path = _feedback(store, spec), Path(spec)
    follow_ups: list[tuple[float, int, Request]] = []
    completions: list[tuple[float, int, str, float, float, bool]] = []
    seq, due = 0, feedback.readings_due
    done: list[Request] = []
    decisions = DecisionColumns()
    micros, limits = array("d"), array("d")
    nxt = next(planned, None)
    while nxt is not None or follow_ups:
        if follow_ups and (nxt is None or follow_ups[0][0] < nxt[0]):
            req = heapq.heappop(follow_ups)[2]
        else:
            req, nxt = nxt, next(planned, None)
        t = req.t
        while completions and completions[0][0] <= t:
            end, _, key, cost, rtt, failed = heapq.heappop(completions)
            feedback.finish(key, end, cost, rtt, failed)
        if due <= t:
            due = feedback.readings(t, len(done))
        key = feedback.scope_key or req.key
        start = time.perf_counter_ns()
        d = store.decide(key, t, req.cost)
        micros.append((time.perf_counter_ns() - start) / 1000.0)
        status, client_done, completed, rtt = path.serve(t, req.client_id, d[0], d[4])
        if d[0] and feedback.finish is not None:
            heapq.heappush(completions, (completed, seq, key, req.cost, rtt, status == UNAVAILABLE_STATUS))
            seq += 1
        if feedback.limit_at is not None:
            limits.append(feedback.limit_at(key))
        done.append(req)
        decisions.extend((d,))
        answer: Decision | Answer = d if status != UNAVAILABLE_STATUS else Answer(False, float(reset_seconds(d.reset_s)))
        for follow in model.react(req._replace(t=client_done + spec.one_way_s), answer):
            if key_of is not None and follow.headers is not None and follow.headers is not req.headers:
                follow = follow._replace(key=key_of(follow.headers))
            heapq.heappush(follow_ups, (follow.t, seq, follow))
            seq += 1
    served = path.served()
    return Replay(_decided(Arrivals.from_requests(done)), decisions, micros, store.evictions, _failed(served, spec),
                  served, limits or None)


def _limit_at(store: ReplayStore) -> Callable[[str], float] | None:
    """A key's limit now, for the log's ``adaptive_limit`` (the algorithm's ``current_limit`` hook
    on the store's state); None when the store keeps no state to read or the limit does not move."""
    current = store.algorithm.current_limit
    if not isinstance(store, InspectableStore) or current is None:
        return None
    state, params = store.state, store.params
    return lambda key: current(state(key), params)  # an int: the log's float column takes it as it is


def _failed(served: Served, spec: SystemSpec) -> list[bool] | None:
    """Which requests the downstream answered 503; None when none was and no schedule could have."""
    failed = served.status == UNAVAILABLE_STATUS
    return failed.tolist() if failed.any() or spec.downstream.schedule else None


class _Readings:
    """CPU/load readings for the rules that read them (``Algorithm.reads``), every READING_S of
    model time as the live target samples its process: ``cpu`` the target processes' mean busy
    share over the last interval, ``load`` the cores they kept busy (the host's run queue)."""

    def __init__(self, store: ReplayStore, spec: SystemSpec) -> None:
        learns = isinstance(store, LearningStore)
        reads = learns and store.algorithm.needs_readings(store.params)
        self.observe = store.observe_reading if learns else None
        self.spec = spec
        self.due = READING_S if reads else math.inf
        self.served, self.busy_s, self.busy = 0, 0.0, 0.0

    def until(self, now: float, served: int) -> float:
        """The readings due by ``now``, ``served`` requests served so far (each costs the target
        ``cpu_s``, added one by one as the target spends it); returns when the next is due."""
        cpu_s, processes = self.spec.cpu_s, self.spec.processes
        for _ in range(served - self.served):
            self.busy_s += cpu_s
        self.served = served
        while self.due <= now:
            cores = (self.busy_s - self.busy) / READING_S
            self.busy = self.busy_s
            self.observe(self.due, Reading(cpu=cores / processes, load=cores))
            self.due += READING_S
        return self.due


def _finisher(store: ReplayStore) -> Callable[[str, float, float, float, bool], None]:
    """``finish(key, now, cost, rtt_s, failed)``: the store's observe-then-release (MemoryStore,
    ClusterStore; ``failed``: answered 503), else its release alone."""
    if isinstance(store, LearningStore):
        return store.finish

    def release_only(key: str, now: float, cost: float, rtt_s: float, failed: bool) -> None:
        store.release(key, now, cost)

    return release_only


def _decided(arrivals: Arrivals) -> Arrivals:
    """The arrivals at the whole µs the algorithms decide at (``decided_at``): the decisions are
    the same, and the log's times are the decided ones, so its over-admission is measured on the
    times the limiter saw (two requests W - 0.3 µs apart are W apart to it)."""
    return dataclasses.replace(arrivals, t=decided_at(np.asarray(arrivals.t, dtype=np.float64)).tolist())


def ideal_decisions(arrivals: Arrivals, policy: Policy) -> list[bool]:
    """sliding_log (the exact reference) on the same arrivals."""
    algorithm = get_algorithm("sliding_log")
    store = MemoryStore(algorithm, build_params("sliding_log", policy), max_keys=max(1, len(arrivals)))
    keys, ts, costs = arrivals.key, arrivals.t, arrivals.cost
    allowed: list[bool] = []
    with _no_gc():  # in blocks: the decisions of a whole large run at once would be its peak
        for first in range(0, len(ts), PART_ROWS):
            part = slice(first, first + PART_ROWS)
            allowed.extend([d[0] for d in store.decide_many(keys[part], ts[part], costs[part])])
    return allowed


def decision_table(result: Replay, algorithm: str, ideal: list[bool], limit_name: str = "default") -> pa.Table:
    """The decision log (contract.schema.DECISION_SCHEMA) of one simulated run."""
    parts = list(decision_parts(result, algorithm, ideal, limit_name))
    return pa.concat_tables(parts) if parts else DECISION_SCHEMA.empty_table()


def decision_parts(result: Replay, algorithm: str, ideal: list[bool], limit_name: str = "default",
                   rows: int = PART_ROWS) -> Iterator[pa.Table]:
    """The decision log in parts of ``rows`` requests, in time order (a writer streams them)."""
    decisions = result.decisions
    if not isinstance(decisions, DecisionColumns):
        decisions = DecisionColumns()
        decisions.extend(result.decisions)
    cols = decisions.columns()
    ids = request_ids(result.arrivals)
    micros = np.asarray(result.decision_us, dtype=np.float64)
    limits = np.asarray(result.limits, dtype=np.float64) if result.limits else None
    names = result.limit_names
    for first in range(0, len(result.arrivals), rows):
        part = slice(first, first + rows)
        yield _decision_part(result.arrivals, part, [c[part] for c in cols], ids[part], micros[part],
                             ideal[part], None if limits is None else limits[part], algorithm,
                             limit_name if names is None else pa.array(names[part], pa.string()))


def _decision_part(a: Arrivals, rows: slice, decision: list[np.ndarray], ids: pa.Array, micros: np.ndarray,
                   ideal: list[bool], limits: np.ndarray | None, algorithm: str, limit_name: str | pa.Array) -> pa.Table:
    allowed, remaining, retry_after, _reset, delay = decision
    n = len(allowed)

    def constant(value: str | pa.Array) -> pa.Array:
        if isinstance(value, pa.Array):
            return value
        return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)), pa.array([value])).cast(pa.string())

    t = pa.array(a.t[rows], pa.float64())
    columns = {
        "t": t, "node": constant(NODE), "algorithm": constant(algorithm), "store": constant(STORE),
        "limit_name": constant(limit_name), "key": pa.array(a.key[rows], pa.string()),
        "cost": pa.array(a.cost[rows], pa.float64()), "allowed": pa.array(allowed, pa.bool_()),
        "remaining": pa.array(remaining, pa.float64()), "retry_after_s": pa.array(retry_after, pa.float64()),
        "decision_us": pa.array(micros), "client_class": pa.array(a.client_class[rows], pa.string()),
        "request_id": ids, "client_id": pa.array(a.client_id[rows], pa.string()),
        "route": pa.array(a.route[rows], pa.string()), "delay_s": pa.array(delay, pa.float64()),
        "ideal_allowed": pa.array(ideal, pa.bool_()), "source": constant(STORE),
        "adaptive_limit": pa.array(limits, pa.float64()) if limits is not None else pa.nulls(n, pa.float64()),
        "arrived_t": t,
    }
    return pa.Table.from_pydict(columns, schema=DECISION_SCHEMA)


def request_ids(arrivals: Arrivals) -> pa.Array:
    """The id a client gives each request, shared by both logs: with attempts, a client's
    attempt 1 starts a new logical request (``<client>#<n>``) and its retries follow; else
    the request's index (cast by Arrow: no Python string per request)."""
    if arrivals.attempt is None:
        return pa.array(np.arange(len(arrivals), dtype=np.int64)).cast(pa.string())
    frame = pd.DataFrame({"client_id": arrivals.client_id, "attempt": arrivals.attempt})
    seq = (frame["attempt"] == 1).groupby(frame["client_id"]).cumsum()
    return pa.array(frame["client_id"] + "#" + seq.astype(str), pa.string())


def client_table(result: Replay) -> pa.Table:
    """The client log (contract.schema.CLIENT_SCHEMA) the system model gives: every request was
    sent when planned (intended = sent: a virtual client is never late)."""
    parts = list(client_parts(result, max(1, len(result.arrivals))))
    return parts[0] if len(parts) == 1 else pa.concat_tables(parts)


def client_parts(result: Replay, rows: int = PART_ROWS) -> Iterator[pa.Table]:
    """``client_table`` in parts of ``rows`` requests (a writer streams them)."""
    served, a = result.served, result.arrivals
    assert served is not None
    attempt = np.ones(len(a), dtype=np.int32) if a.attempt is None else np.asarray(a.attempt, dtype=np.int32)
    ids = request_ids(a)
    for first in range(0, max(1, len(a)), rows):
        part = slice(first, first + rows)
        yield pa.Table.from_pydict({
            "request_id": ids[part], "intended_t": pa.array(served.sent_t[part]),
            "sent_t": pa.array(served.sent_t[part]), "done_t": pa.array(served.done_t[part]),
            "status": pa.array(served.status[part], pa.int32()), "attempt": pa.array(attempt[part], pa.int32()),
            "limit_fields": pa.nulls(len(ids[part]), pa.string()),  # a virtual answer carries no headers
            "client_address": pa.nulls(len(attempt[part]), pa.string()),  # virtual clients send from no address
            "role": pa.array([ROLE_PLAN] * len(attempt[part]), pa.string()),
        }, schema=CLIENT_SCHEMA)


def simulate(model: TrafficModel, algorithm_name: str, policy: Policy, params: Any,
             *, max_keys: int = 1_000_000, ideal: list[bool] | None = None,
             fleet: Fleet | None = None, system: SystemSpec | None = None) -> tuple[pa.Table, Replay]:
    """One run: replay (through ``system``, the path around the limiter, when given), the ideal
    replay (unless given: for an open-loop model it is the same for every algorithm), and the
    decision log."""
    result, ideal = simulated(model, algorithm_name, policy, params, max_keys=max_keys, ideal=ideal,
                              fleet=fleet, system=system)
    return decision_table(result, algorithm_name, ideal), result


def simulated(model: TrafficModel, algorithm_name: str, policy: Policy, params: Any,
              *, max_keys: int = 1_000_000, ideal: list[bool] | None = None, fleet: Fleet | None = None,
              system: SystemSpec | None = None, gateway: Gateway | None = None) -> tuple[Replay, list[bool]]:
    """``simulate`` without building the decision log: the replay and its ideal decisions (a
    large run streams its log with ``decision_parts``)."""
    algorithm = get_algorithm(algorithm_name)
    result = replay(model, algorithm, params, max_keys=max_keys, fleet=fleet, system=system, gateway=gateway)
    if ideal is None:
        is_reference = algorithm_name == "sliding_log" and params == build_params("sliding_log", policy)
        ideal = result.allowed if is_reference else ideal_decisions(result.arrivals, policy)
    return result, ideal
