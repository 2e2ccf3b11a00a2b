"""The downstream in virtual time: the live ``targets.downstream.Downstream`` as a queue model.

The same ``DownstreamConfig`` drives both: ``concurrency`` slots served first come first served,
a lognormal service time (``median_ms`` x exp(N(0, sigma))), shaped by the health phase in force
when the call gets its slot (``targets.downstream_phases.call_duration``, the live downstream's
own: ``degraded`` factors, ``stuck`` and ``paused`` phases), and ``outage`` phases during which a
call is answered 503 at once, without a slot or any service time (as live). Pure and seeded: the
service times are the live downstream's own stream (targets/service_times.py), so with one seed
the model's k-th call takes what the live one's k-th call takes.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable

from targets.config import DownstreamConfig
from targets.downstream import OUTAGE
from targets.downstream_phases import call_duration
from targets.service_times import ServiceTimes

CALLER_DRAWS = 1024
"""Service times ``caller`` computes at a time (a short run needs no block of 65,536)."""
UNAVAILABLE = -1.0
"""``serve``'s answer for a call made during an outage: a 503 at once."""


class DownstreamModel:
    """``serve(arrive) -> done`` for each call in the order they reach the downstream: a heap of
    the slots' free times (an M/G/c FIFO queue), plus what the run's report needs (busy time)."""

    def __init__(self, config: DownstreamConfig, seed: int, overhead_s: float = 0.0) -> None:
        self.slots = [0.0] * config.concurrency
        self.concurrency = config.concurrency
        self.median_s = config.service_time.median_ms / 1000.0
        self.overhead_s = overhead_s
        """What a call holds its slot beyond its service time (the live stack's own: ``SystemSpec``)."""
        self._phase_at = [p.at_s for p in config.schedule]
        self._phases = list(config.schedule)
        self._times = ServiceTimes(self.median_s, config.service_time.sigma, seed if config.seed is None else config.seed)
        self.busy_s = 0.0
        """Slot-seconds held (service and overhead): utilisation = busy_s / (concurrency x span)."""
        self.calls = 0
        self.failed = 0

    def health(self, t: float) -> str:
        """The phase at model time ``t``: the schedule counts from t = 0."""
        i = bisect.bisect_right(self._phase_at, t)
        return "healthy" if i == 0 else self._phases[i - 1].health

    def service_time(self, start: float) -> float:
        """A call's duration when it gets its slot at ``start``: a lognormal draw, shaped by the phase."""
        base = self._times.next()
        if not self._phase_at:
            return base
        i = bisect.bisect_right(self._phase_at, start)
        if i == 0:
            return base
        p = self._phases[i - 1]
        return call_duration(p.health, base, start - p.at_s, p.factor, p.latency_ms, p.period_s, p.pause_ms)

    def serve(self, arrive: float) -> float:
        """When the call that reaches the downstream at ``arrive`` is done; UNAVAILABLE (and no
        slot) while an outage phase is in force."""
        if self._phase_at and self.health(arrive) == OUTAGE:
            self.failed += 1
            return UNAVAILABLE
        free = self.slots[0]
        start = arrive if arrive > free else free
        service = self.service_time(start) + self.overhead_s
        done = start + service
        heapq.heapreplace(self.slots, done)
        self.busy_s += service
        self.calls += 1
        return done

    def caller(self) -> tuple[Callable[[float], float], Callable[[], None]]:
        """``serve`` as a closure over local names for a loop that calls it per request (an
        attribute lookup on ``self`` costs as much as a step of the queue), the same results
        from the same draws; and ``settle()``, which writes the calls' totals (``busy_s``,
        ``calls``, ``failed``) back once the loop is done."""
        slots, replace, bisect_right = self.slots, heapq.heapreplace, bisect.bisect_right
        phase_at, phases, median, overhead = self._phase_at, self._phases, self.median_s, self.overhead_s
        outage = [p.health == OUTAGE for p in phases]
        drawn, take = self._times.drawn, self._times.take
        services: list[float] = []
        k = calls = failed = 0
        busy = 0.0

        def serve(arrive: float) -> float:
            nonlocal services, k, busy, calls, failed
            if phase_at:
                i = bisect_right(phase_at, arrive)
                if i and outage[i - 1]:
                    failed += 1
                    return UNAVAILABLE
            free = slots[0]
            start = arrive if arrive > free else free
            service = median
            if drawn:
                if k == len(services):
                    services, k = take(CALLER_DRAWS), 0
                service = services[k]
                k += 1
            if phase_at:
                i = bisect_right(phase_at, start)
                if i:
                    p = phases[i - 1]
                    service = call_duration(p.health, service, start - p.at_s, p.factor, p.latency_ms, p.period_s, p.pause_ms)
            service += overhead
            done = start + service
            replace(slots, done)
            busy += service
            calls += 1
            return done

        def settle() -> None:
            self.busy_s += busy
            self.calls += calls
            self.failed += failed

        return serve, settle

    def serve_many(self, arrive: list[float]) -> list[float]:
        """``serve`` of each call in order, the same results; without a health schedule in a
        tight loop over service times drawn ahead (a method call and a phase lookup per call
        were most of an open-path replay's time)."""
        if self._phase_at or not self._times.drawn:
            return [self.serve(a) for a in arrive]
        services = self._times.take(len(arrive))
        overhead = self.overhead_s
        slots, replace = self.slots, heapq.heapreplace
        out: list[float] = []
        busy = self.busy_s
        for a, service in zip(arrive, services):
            free = slots[0]
            service += overhead  # as ``serve`` adds it: the same floats
            done = (a if a > free else free) + service
            replace(slots, done)
            busy += service
            out.append(done)
        self.busy_s = busy
        self.calls += len(out)
        return out

    def utilisation(self, span_s: float) -> float | None:
        """Share of slot time held over ``span_s`` seconds (None for an empty span)."""
        return round(self.busy_s / (self.concurrency * span_s), 4) if span_s > 0 else None
