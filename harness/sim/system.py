"""The whole path of a request in virtual time: client -> network -> target process -> limiter
-> downstream -> answer, as a discrete-event model, deterministic for a seed.

The limiter decides when the request reaches the target (the model's time ``t``: the decision
log's times, and so every rate algorithm's decisions, are those of the arrivals alone); the
target's process then spends its CPU on it (FIFO, refused requests too), a Redis store adds its
round trip, a queueing limiter holds it ``delay_s``, the downstream serves it (its slots, its
service time, its health), and the answer travels back. The client sent it one network delay
before ``t`` and reads the answer one network delay after it left the target.

Two drivers share the model: ``serve_open`` for limiters whose decisions do not depend on the
answers (every rate algorithm, open-loop traffic: numpy over whole columns after the fast
replay), and ``Path`` step by step for the event loop (harness/sim/simulator.py) when they do:
concurrency limiters give their slot back at the simulated completion, ``adaptive`` observes
each simulated latency, closed-loop clients react when their answer arrives.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.campaign.system import DownstreamSettings, SystemSettings
from scenarios import TrafficModel
from targets.config import DownstreamConfig, deep_merge

from .downstream_model import UNAVAILABLE, DownstreamModel
from .target_model import (
    LOOPBACK_ONE_WAY_US,
    SLOT_OVERHEAD_US,
    TargetProcesses,
    cpu_samples,
    cpu_us_for,
    fifo_done,
    processes_of,
    redis_round_trip_us,
)

OK, TOO_MANY, UNAVAILABLE_STATUS = 200, 429, 503


@dataclass(frozen=True)
class SystemSpec:
    """Everything on the path but the limiter, resolved for one run (seconds)."""

    downstream: DownstreamConfig
    processes: int = 1
    cpu_s: float = 0.0
    one_way_s: float = 0.0
    store_rtt_s: float = 0.0
    seed: int = 1
    slot_overhead_s: float = 0.0
    """What each downstream call holds its slot beyond its service time (target_model.SLOT_OVERHEAD_US)."""


def system_for(model: TrafficModel, algorithm: str, settings: SystemSettings | None = None,
               downstream: DownstreamSettings | None = None, seed: int = 1) -> SystemSpec:
    """A run's system as live builds its target (harness/live/config.py): the campaign's
    downstream, the model's own downstream settings (its health schedule) on top."""
    settings = settings or SystemSettings()
    ds = downstream or DownstreamSettings()
    raw = {"concurrency": ds.concurrency, "service_time": {"median_ms": ds.median_ms, "sigma": ds.sigma}, "seed": seed}
    config = DownstreamConfig.model_validate(deep_merge(raw, model.target_config().get("downstream") or {}))
    cpu_us = cpu_us_for(algorithm) if settings.cpu_us is None else settings.cpu_us
    one_way_us = LOOPBACK_ONE_WAY_US if settings.one_way_us is None else settings.one_way_us
    rtt_us = settings.store_rtt_us
    if rtt_us is None:
        rtt_us = redis_round_trip_us(algorithm) if settings.store == "redis" else 0.0
    overhead_us = SLOT_OVERHEAD_US if settings.slot_overhead_us is None else settings.slot_overhead_us
    return SystemSpec(config, settings.processes, cpu_us / 1e6, one_way_us / 1e6, rtt_us / 1e6, seed, overhead_us / 1e6)


@dataclass
class Served:
    """Per decided request (decision order): what the client saw, and the target's work."""

    sent_t: np.ndarray
    done_t: np.ndarray
    status: np.ndarray
    process: np.ndarray
    cpu_done: np.ndarray
    downstream: DownstreamModel
    spec: SystemSpec

    def cpu(self) -> pd.DataFrame:
        """cpu.csv of the target processes (contract.schema.CPU_COLUMNS), in model time."""
        return cpu_samples(self.cpu_done, self.process, self.spec.processes, self.spec.cpu_s)

    def measures(self) -> dict[str, float | None]:
        """The system's own figures for the summary: target cores busy, downstream utilisation."""
        span = float(self.done_t.max() - self.sent_t.min()) if len(self.done_t) else 0.0
        work = len(self.cpu_done) * self.spec.cpu_s
        return {"target_cores": round(work / span, 3) if span > 0 else None,
                "downstream_utilisation": self.downstream.utilisation(span)}


def serve_open(spec: SystemSpec, t: np.ndarray, client_id: list[str], allowed: np.ndarray,
               delay_s: np.ndarray) -> Served:
    """The path of requests decided without the answers (decisions in time order): target
    processes in closed form, then the admitted through the downstream in the order they reach it."""
    t = np.asarray(t, dtype=np.float64)
    process = processes_of(client_id, spec.processes)
    cpu_done = np.empty_like(t)
    for p in range(spec.processes):
        mine = process == p
        cpu_done[mine] = fifo_done(t[mine], spec.cpu_s)
    ready = cpu_done + spec.store_rtt_s
    admitted = np.flatnonzero(allowed)
    arrive = ready[admitted] + np.asarray(delay_s, dtype=np.float64)[admitted]
    order = np.argsort(arrive, kind="stable")
    downstream = DownstreamModel(spec.downstream, spec.seed, spec.slot_overhead_s)
    finished = np.empty(len(admitted))
    finished[order] = downstream.serve_many(arrive[order].tolist())
    served = finished != UNAVAILABLE
    status = np.full(len(t), TOO_MANY, dtype=np.int32)
    status[admitted] = np.where(served, OK, UNAVAILABLE_STATUS)
    answered = ready.copy()
    answered[admitted] = np.where(served, finished, arrive)
    return Served(t - spec.one_way_s, answered + spec.one_way_s, status, process, cpu_done, downstream, spec)


Outcome = tuple[int, float, float, float]
"""One request through ``Path.serve``: (status, when its answer reaches the client, when the
limiter hears of its completion, the latency it observes). A plain tuple: built per request."""


class Path:
    """The model one request at a time, for the event loop; ``served()`` gives the columns."""

    def __init__(self, spec: SystemSpec) -> None:
        self.spec = spec
        self.target = TargetProcesses(spec.processes, spec.cpu_s)
        self.downstream = DownstreamModel(spec.downstream, spec.seed, spec.slot_overhead_s)
        self._process_of: dict[str, int] = {}
        # typed arrays, not lists: 8 bytes a value instead of a float object's 32
        self.sent, self.done, self.cpu_done = array("d"), array("d"), array("d")
        self.status, self.process = array("i"), array("q")

    def serve(self, t: float, client_id: str, allowed: bool, delay_s: float) -> Outcome:
        spec = self.spec
        process = self._process_of.get(client_id)
        if process is None:
            process = self._process_of[client_id] = len(self._process_of) % spec.processes
        cpu_done = self.target.serve(process, t)
        ready = cpu_done + spec.store_rtt_s
        self.sent.append(t - spec.one_way_s)
        self.process.append(process)
        self.cpu_done.append(cpu_done)
        if not allowed:
            self.status.append(TOO_MANY)
            self.done.append(ready + spec.one_way_s)
            return (TOO_MANY, ready + spec.one_way_s, ready, 0.0)
        arrive = ready + delay_s
        finished = self.downstream.serve(arrive)
        status, end = (UNAVAILABLE_STATUS, arrive) if finished == UNAVAILABLE else (OK, finished)
        self.status.append(status)
        self.done.append(end + spec.one_way_s)
        return (status, end + spec.one_way_s, end, end - (t + delay_s))

    def served(self) -> Served:
        return Served(np.asarray(self.sent), np.asarray(self.done), np.asarray(self.status, dtype=np.int32),
                      np.asarray(self.process, dtype=np.int64), np.asarray(self.cpu_done), self.downstream, self.spec)
