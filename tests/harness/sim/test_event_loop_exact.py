"""The simulator's replays through the system model (harness/sim/simulator.py, system.py) against
a plain reference written here, one request at a time with nothing precomputed and nothing
shared with the simulator's model: the decisions, the client log's times and statuses, the
target's work, the downstream's totals and the adaptive limit after each decision must be the
very same floats, for every limiter kind (holding, observing, reading, open) and a closed-loop
model. The simulator's loop is optimised for speed; this is what keeps it exact."""

from __future__ import annotations

import dataclasses
import heapq
import math
from dataclasses import dataclass, field

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.campaign.system import SystemSettings
from harness.sim.simulator import READING_S, Answer, Replay, replay_on, virtual_arrivals
from harness.sim.system import SystemSpec, system_for
from harness.sim.target_model import fifo_done
from scenarios import Arrivals, Request, TrafficModel, build_model
from targets.algorithms import Decision, Policy, build_params, get_algorithm
from targets.algorithms.adaptive_rules import Reading
from targets.algorithms.base import decided_at
from targets.config import DownstreamConfig
from targets.downstream_phases import call_duration
from targets.headers import reset_seconds
from targets.stores.memory import MemoryStore


class PlainDownstream:
    """The downstream as its docstring says: FIFO slots, median x exp(sigma z) drawn one at a time
    when a call gets its slot, shaped by the phase in force then, the slot held ``overhead`` more;
    an outage answers at once."""

    def __init__(self, config: DownstreamConfig, seed: int, overhead: float) -> None:
        self.slots = [0.0] * config.concurrency
        self.median, self.sigma = config.service_time.median_ms / 1000.0, config.service_time.sigma
        self.phases = config.schedule
        self.rng = np.random.default_rng(seed if config.seed is None else config.seed)
        self.busy_s, self.calls, self.failed = 0.0, 0, 0
        self.overhead = overhead

    def phase(self, t: float):
        now = [p for p in self.phases if p.at_s <= t]
        return now[-1] if now else None

    def serve(self, arrive: float) -> float | None:
        phase = self.phase(arrive)
        if phase is not None and phase.health == "outage":
            self.failed += 1
            return None
        start = max(arrive, self.slots[0])
        service = self.median
        if self.median > 0 and self.sigma:
            service = self.median * math.exp(self.sigma * self.rng.standard_normal())
        phase = self.phase(start)
        if phase is not None:
            service = call_duration(phase.health, service, start - phase.at_s, phase.factor, phase.latency_ms,
                                    phase.period_s, phase.pause_ms)
        service += self.overhead
        heapq.heapreplace(self.slots, start + service)
        self.busy_s += service
        self.calls += 1
        return start + service


@dataclass
class Plain:
    """What the reference saw, request by request in decision order."""

    requests: list[Request] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    sent: list[float] = field(default_factory=list)
    done: list[float] = field(default_factory=list)
    status: list[int] = field(default_factory=list)
    process: list[int] = field(default_factory=list)
    cpu_done: list[float] = field(default_factory=list)
    limits: list[float] = field(default_factory=list)


def planned(traffic: TrafficModel | Arrivals) -> list[Request]:
    arrivals = traffic if isinstance(traffic, Arrivals) else virtual_arrivals(traffic)
    return list(dataclasses.replace(arrivals, t=decided_at(np.asarray(arrivals.t)).tolist()).requests())


def plain_events(store: MemoryStore, traffic: TrafficModel | Arrivals, spec: SystemSpec) -> tuple[Plain, PlainDownstream]:
    """The event loop: completions (slot back, latency seen) and CPU readings before each decision,
    closed-loop follow-ups sent when their answer reached the client."""
    algorithm, model = store.algorithm, None if isinstance(traffic, Arrivals) else traffic
    if model is not None:
        model.reset()
    waiting, follow_ups, completions = planned(traffic), [], []
    out, free, process_of = Plain(), [0.0] * spec.processes, {}
    downstream = PlainDownstream(spec.downstream, spec.seed, spec.slot_overhead_s)
    busy, busy_seen = 0.0, 0.0
    due = READING_S if algorithm.needs_readings(store.params) else math.inf
    i = seq = 0
    while i < len(waiting) or follow_ups:
        if follow_ups and (i == len(waiting) or follow_ups[0][0] < waiting[i].t):
            req = heapq.heappop(follow_ups)[2]
        else:
            req, i = waiting[i], i + 1
        while completions and completions[0][0] <= req.t:
            end, _, key, cost, rtt, failed = heapq.heappop(completions)
            store.finish(key, end, cost, rtt, failed)
        while due <= req.t:
            cores, busy_seen = (busy - busy_seen) / READING_S, busy
            store.observe_reading(due, Reading(cpu=cores / spec.processes, load=cores))
            due += READING_S
        key = "global" if algorithm.observe is not None else req.key
        d = store.decide(key, req.t, req.cost)
        p = process_of.setdefault(req.client_id, len(process_of) % spec.processes)
        cpu_done = free[p] = max(req.t, free[p]) + spec.cpu_s
        busy += spec.cpu_s
        status, end = 429, cpu_done + spec.store_rtt_s
        if d.allowed:
            arrive = end + d.delay_s
            finished = downstream.serve(arrive)
            status, end = (503, arrive) if finished is None else (200, finished)
            if algorithm.release is not None or algorithm.observe is not None:
                heapq.heappush(completions, (end, seq, key, req.cost, end - (req.t + d.delay_s), status == 503))
                seq += 1
        if algorithm.current_limit is not None:
            out.limits.append(float(algorithm.current_limit(store.state(key), store.params)))
        for column, value in zip((out.requests, out.decisions, out.sent, out.done, out.status, out.process, out.cpu_done),
                                 (req, d, req.t - spec.one_way_s, end + spec.one_way_s, status, p, cpu_done)):
            column.append(value)
        if model is not None and model.reactive:
            answer = d if status != 503 else Answer(False, float(reset_seconds(d.reset_s)))
            for follow in model.react(req._replace(t=end + spec.one_way_s + spec.one_way_s), answer):
                heapq.heappush(follow_ups, (follow.t, seq, follow))
                seq += 1
    return out, downstream


def plain_open(store: MemoryStore, traffic: TrafficModel | Arrivals, spec: SystemSpec) -> tuple[Plain, PlainDownstream]:
    """The open path: every decision first, the target's processes in closed form (``fifo_done``,
    hand-checked in test_system_model.py), then the admitted in the order they reach the downstream."""
    out, process_of = Plain(), {}
    for req in planned(traffic):
        out.requests.append(req)
        out.decisions.append(store.decide(req.key, req.t, req.cost))
        out.process.append(process_of.setdefault(req.client_id, len(process_of) % spec.processes))
    t, process = np.array([r.t for r in out.requests]), np.array(out.process)
    cpu_done = np.empty_like(t)
    for p in range(spec.processes):
        cpu_done[process == p] = fifo_done(t[process == p], spec.cpu_s)
    ready = cpu_done + spec.store_rtt_s
    arrive = {i: ready[i] + d.delay_s for i, d in enumerate(out.decisions) if d.allowed}
    answered, status, downstream = ready.tolist(), [429] * len(t), PlainDownstream(spec.downstream, spec.seed, spec.slot_overhead_s)
    for i in sorted(arrive, key=lambda i: arrive[i]):
        finished = downstream.serve(arrive[i])
        status[i], answered[i] = (503, arrive[i]) if finished is None else (200, finished)
    out.sent, out.done = (t - spec.one_way_s).tolist(), [a + spec.one_way_s for a in answered]
    out.status, out.cpu_done = status, cpu_done.tolist()
    return out, downstream


def assert_same(result: Replay, plain: Plain, downstream: PlainDownstream) -> None:
    """Bit for bit: ``array_equal`` on floats, no tolerance."""
    served = result.served
    requests = sorted(plain.requests, key=lambda r: r.t)  # the log's rows are in time order
    assert result.arrivals.t == decided_at(np.array([r.t for r in requests])).tolist()
    assert result.arrivals.client_id == [r.client_id for r in requests]
    expected = [np.array(c) for c in zip(*plain.decisions)]
    for got, want in zip(result.decisions.columns(), expected):
        assert np.array_equal(got, want)
    for got, want in ((served.sent_t, plain.sent), (served.done_t, plain.done), (served.status, plain.status),
                      (served.process, plain.process), (served.cpu_done, plain.cpu_done)):
        assert np.array_equal(got, np.array(want))
    assert np.array_equal(np.asarray(result.limits if result.limits is not None else []), np.array(plain.limits))
    totals = served.downstream.busy_s, served.downstream.calls, served.downstream.failed
    assert totals == (downstream.busy_s, downstream.calls, downstream.failed)


class Recording(MemoryStore):
    """A memory store that keeps every CPU reading it is given (they decide only past a threshold)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.readings: list[tuple[float, Reading]] = []

    def observe_reading(self, now, reading):
        self.readings.append((now, reading))
        return super().observe_reading(now, reading)


def check(algorithm: str, policy: Policy, traffic: TrafficModel | Arrivals, spec: SystemSpec,
          **params: str) -> tuple[Replay, list[tuple[float, Reading]]]:
    """The simulator's replay and the reference's, each on a fresh store, compared (and the CPU
    readings each gave the limiter); the replay and its readings."""
    def store() -> Recording:
        return Recording(get_algorithm(algorithm), build_params(algorithm, policy, params))

    ours, theirs = store(), store()
    result = replay_on(ours, traffic, spec)
    reference = plain_events if _through_events(algorithm, traffic) else plain_open
    assert_same(result, *reference(theirs, traffic, spec))
    assert ours.readings == theirs.readings
    return result, ours.readings


def _through_events(algorithm: str, traffic: TrafficModel | Arrivals) -> bool:
    limiter = get_algorithm(algorithm)
    return limiter.release is not None or limiter.observe is not None or (not isinstance(traffic, Arrivals) and traffic.reactive)


def unhealthy() -> TrafficModel:
    return build_model("unhealthy_downstream", 100, 1, 1, {})


def ramp(**extra: str) -> TrafficModel:
    return build_model("ramp", 1000, 1, 1, {"start_rps": "200", "end_rps": "4000", "duration_s": "1.5",
                                            "clients": "30", **extra})


REDIS_3 = SystemSettings(processes=3, store="redis", one_way_us=25.0)


def test_concurrency_releases_exactly_as_the_plain_loop():
    for model in (unhealthy(), ramp()):
        for settings_ in (None, REDIS_3):
            result, _ = check("concurrency", Policy(100, 1, 8), model, system_for(model, "concurrency", settings_))
            assert 0 < sum(not d.allowed for d in result.decisions) < len(result.decisions)


READING_RULES = {"sentinel_cpu": {"cpu_threshold": "0.05"}, "sentinel_bbr": {"sentinel_load_threshold": "0.2"}}
"""Thresholds the ramp's target CPU passes (0.47 cores at its top), so the readings decide."""


def test_adaptive_limits_move_exactly_as_the_plain_loop():
    for rule in ("gradient2", "aimd", "vegas", "sentinel_cpu", "sentinel_bbr", "gozero"):
        for model in (unhealthy(), ramp()):
            result, readings = check("adaptive", Policy(100, 1, 32), model, system_for(model, "adaptive", REDIS_3),
                                     rule=rule, **READING_RULES.get(rule, {}))
            assert len(set(result.limits)) > 1 or not all(d.allowed for d in result.decisions)
            assert bool(readings) == (rule in ("sentinel_cpu", "sentinel_bbr", "gozero"))


def test_gcra_and_a_queueing_leaky_bucket_on_the_open_path_as_the_plain_loop():
    for model in (unhealthy(), ramp(shared_key="false")):
        check("gcra", Policy(100, 1, 20), model, system_for(model, "gcra", REDIS_3))
        check("leaky_bucket", Policy(100, 1, 5), model, system_for(model, "leaky_bucket"), mode="queue", max_delay_s="0.2")


def test_a_retry_storm_against_an_outage_follows_up_exactly_as_the_plain_loop():
    model = build_model("retry_storm", 10, 1, 1, {"clients": "40", "trigger": "outage", "outage_at_s": "0.05",
                                                  "outage_s": "0.3"})
    result, _ = check("token_bucket", Policy(10, 1, 10), model, system_for(model, "token_bucket", REDIS_3))
    assert (result.served.status == 503).any() and len(result.arrivals) > 40


PHASES = st.lists(st.tuples(st.sampled_from(["degraded", "outage", "stuck", "paused", "recovered"]),
                            st.integers(1, 40)), max_size=3)


@settings(max_examples=60, deadline=None)
@given(times_ms=st.lists(st.integers(0, 80), min_size=1, max_size=60), clients=st.integers(1, 4),
       slots=st.integers(1, 3), median_ms=st.sampled_from([0.0, 2.0, 5.0]), sigma=st.sampled_from([0.0, 0.8]),
       phases=PHASES, processes=st.integers(1, 3), cpu_ms=st.sampled_from([0.0, 0.5, 1.0]),
       limiter=st.sampled_from(["concurrency", "gradient2", "aimd", "gozero"]), overhead_ms=st.sampled_from([0.0, 1.0]))
def test_any_small_run_on_a_millisecond_grid_is_the_plain_loops(times_ms, clients, slots, median_ms, sigma, phases,
                                                               processes, cpu_ms, limiter, overhead_ms):
    """Ties everywhere: arrivals, completions and phase edges on whole milliseconds (a completion
    at a request's time is seen before its decision), in every health phase."""
    at, schedule = 0, []
    for health, gap_ms in phases:
        at += gap_ms
        schedule.append({"at_s": at / 1000, "health": health, "factor": 3, "latency_ms": 7, "period_s": 0.01,
                         "pause_ms": 2})
    n = len(times_ms)
    traffic = Arrivals.from_columns(np.sort(np.array(times_ms)) / 1000, [f"c{i % clients}" for i in range(n)],
                                    ["legit"] * n, ["GET /api/items"] * n, np.ones(n))
    config = DownstreamConfig.model_validate({"concurrency": slots, "schedule": schedule,
                                              "service_time": {"median_ms": median_ms, "sigma": sigma}})
    spec = SystemSpec(config, processes, cpu_ms / 1000, 0.0001, 0.0, seed=4, slot_overhead_s=overhead_ms / 1000)
    algorithm, params = ("concurrency", {}) if limiter == "concurrency" else ("adaptive", {"rule": limiter})
    check(algorithm, Policy(10, 1, 2), traffic, spec, **params)
