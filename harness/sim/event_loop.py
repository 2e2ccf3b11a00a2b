"""The event loop for planned traffic: every request known before the replay (an open-loop model
or arrivals), decided through a limiter that holds or observes, so each decision must see the
simulated completions before it (slots given back, latencies observed) and the CPU readings due.

The same model as ``system.Path`` one request at a time, and the same floats (checked against a
plain reference in tests/harness/sim/test_event_loop_exact.py), with what does not depend on the
decisions taken out of the loop: the target's processes are served for the whole run first
(``TargetProcesses.serve_all``: a request's CPU does not depend on its decision), the client
log's columns are built with numpy afterwards, and inside the loop a request costs its decision,
and if admitted one downstream call (``DownstreamModel.caller``) and one heap push; no object is
built per request but the decision and the completion's tuple.
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from array import array
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from scenarios import Arrivals
from targets.algorithms import Decision
from targets.stores.protocol import ReplayStore

from .decision_columns import BLOCK, DecisionColumns
from .downstream_model import UNAVAILABLE, DownstreamModel
from .system import OK, TOO_MANY, UNAVAILABLE_STATUS, Served, SystemSpec
from .target_model import TargetProcesses, processes_of

TIMED_EVERY = 16
"""One decision in this many is timed, and the others of its block take its time: two clock
reads per decision cost a quarter of a cheap decision's replay. A sample, not a block mean
(the open path's), so the log's percentiles of ``decision_us`` stay those of single decisions."""
TIMED_MASK = TIMED_EVERY - 1

Finish = Callable[[str, float, float, float, bool], None]
"""``finish(key, now, cost, rtt_s, failed)``: a completion's latency observed, its slot given back."""


@dataclass
class Feedback:
    """What the loop tells the limiter besides its decisions, and how the log reads it back."""

    finish: Finish | None
    """Called at each admitted request's simulated completion; None: the limiter neither holds nor observes."""
    readings_due: float
    """Model time of the first CPU reading (inf: the limiter reads none)."""
    readings: Callable[[float, int], float]
    """``readings(now, served) -> next due``: the readings due by ``now``, ``served`` requests in."""
    limit_at: Callable[[str], float] | None
    """The key's limit after a decision, for the log's ``adaptive_limit`` (None: not traced)."""
    scope_key: str | None
    """The one key every request is decided on (a limiter of the downstream as a whole), else each its own."""


@dataclass
class Columns:
    """What the loop writes, per request in decision order: preallocated where every request
    has a value (``ends``: an admitted request's answer at the target), appended where not."""

    decisions: DecisionColumns
    nanos: array
    """The timed decisions' own times (ns): one in TIMED_EVERY."""
    limits: array
    ends: array
    failed: array
    """The requests the downstream answered 503 (an outage)."""

    @classmethod
    def of(cls, n: int) -> Columns:
        return cls(DecisionColumns(), array("q"), array("d"), array("d", bytes(8 * n)), array("q"))


@dataclass
class Loop:
    """The loop's results: the decisions, their timing and limit trace, and the system's columns."""

    decisions: DecisionColumns
    decision_us: np.ndarray
    limits: array
    served: Served


def run_planned(arrivals: Arrivals, store: ReplayStore, spec: SystemSpec, feedback: Feedback) -> Loop:
    """Decide ``arrivals`` (in time order) through ``store`` with the system model around it."""
    n = len(arrivals)
    process = processes_of(arrivals.client_id, spec.processes)
    cpu_done = TargetProcesses(spec.processes, spec.cpu_s).serve_all(arrivals.t, process)
    ready = cpu_done + spec.store_rtt_s
    downstream = DownstreamModel(spec.downstream, spec.seed, spec.slot_overhead_s)
    serve, settle = downstream.caller()
    out = Columns.of(n)
    keys = itertools.repeat(feedback.scope_key, n) if feedback.scope_key is not None else arrivals.key
    _loop(zip(itertools.count(), arrivals.t, keys, arrivals.cost, ready.tolist()), store.decide, serve, feedback, out)
    settle()
    allowed = out.decisions.column("allowed")
    status = np.where(allowed, OK, TOO_MANY).astype(np.int32)
    status[np.asarray(out.failed, dtype=np.int64)] = UNAVAILABLE_STATUS
    done = np.where(allowed, np.asarray(out.ends), ready) + spec.one_way_s
    sent = np.asarray(arrivals.t, dtype=np.float64) - spec.one_way_s
    served = Served(sent, done, status, process.astype(np.int64), cpu_done, downstream, spec)
    micros = np.repeat(np.asarray(out.nanos, dtype=np.float64) / 1000.0, TIMED_EVERY)[:n]
    return Loop(out.decisions, micros, out.limits, served)


Request = tuple[int, float, str, float, float]
"""(index, t, key, cost, when the target is ready to call the downstream)."""


def _loop(requests: Iterable[Request], decide: Callable[[str, float, float], Decision],
          serve: Callable[[float], float], feedback: Feedback, out: Columns) -> None:
    """The hot loop, its names bound locally: one float compare per request for the completions
    due (``next_end``, the heap's earliest) and one for the readings."""
    pending, pack, clock, push = out.decisions.pending, out.decisions.pack, time.perf_counter_ns, heapq.heappush
    nanos, limits, ends, failed = out.nanos, out.limits, out.ends, out.failed
    readings, due, limit_at, holds = feedback.readings, feedback.readings_due, feedback.limit_at, feedback.finish is not None
    release_until, completions = _completions(feedback.finish)
    next_end = math.inf
    for i, t, key, cost, ready in requests:
        if next_end <= t:
            next_end = release_until(t)
        if due <= t:
            due = readings(t, i)
        if i & TIMED_MASK:
            d = decide(key, t, cost)
        else:
            start = clock()
            d = decide(key, t, cost)
            nanos.append(clock() - start)
        pending.append(d)
        if d[0]:
            delay = d[4]
            arrive = ready + delay
            end = serve(arrive)
            down = end == UNAVAILABLE
            if down:
                end = arrive
                failed.append(i)
            ends[i] = end
            if holds:
                push(completions, (end, i, key, cost, end - (t + delay), down))
                if end < next_end:
                    next_end = end
        if limit_at is not None:
            limits.append(limit_at(key))
        if len(pending) >= BLOCK:
            pack()


def _completions(finish: Finish | None) -> tuple[Callable[[float], float], list]:
    """``release_until(t) -> the next completion's time``: every completion at or before ``t``
    finished in time order (a tie in the order its request was decided), and the heap they wait in."""
    completions: list[tuple[float, int, str, float, float, bool]] = []
    pop = heapq.heappop

    def release_until(t: float) -> float:
        while completions and completions[0][0] <= t:
            end, _, key, cost, rtt, failed = pop(completions)
            finish(key, end, cost, rtt, failed)
        return completions[0][0] if completions else math.inf

    return release_until, completions
