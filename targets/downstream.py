"""The simulated service behind the limiter: finite concurrency and a lognormal service time
whose scale follows a health schedule, so overload shows up as queueing latency (not errors).

The schedule is a list of phases (``healthy``, ``degraded`` by a factor, ``recovered``,
``outage``) in seconds after a start time shared by every node; ``/_bench/health`` can override
it at run time. During an ``outage`` every admitted request fails fast: the route answers 503
at once, without a slot or any service time (a crashed dependency whose client errors at once).
"""

from __future__ import annotations

import asyncio
import bisect
import time
from dataclasses import dataclass

from starlette.exceptions import HTTPException

from .config import DownstreamConfig, Phase
from .downstream_phases import call_duration
from .service_times import ServiceTimes

OUTAGE = "outage"
GONE = 499
"""The status of a call cancelled because its client went away (nobody reads it; nginx's code)."""


class Unavailable(HTTPException):
    """The downstream is in an outage phase: the route answers 503 (no Retry-After: nobody
    knows when it is back). Raised from ``Downstream.call``; FastAPI turns it into the answer."""

    def __init__(self) -> None:
        super().__init__(503, "downstream unavailable (outage)")


@dataclass
class Counters:
    calls: int = 0
    completed: int = 0
    in_flight: int = 0
    """Being served (holding a slot)."""
    waiting: int = 0
    """Queued for a slot."""
    failed: int = 0
    """Answered 503 at once during an outage (not in ``calls``: no work was done)."""


class Downstream:
    def __init__(self, config: DownstreamConfig, start_at: float) -> None:
        self.slots = asyncio.Semaphore(config.concurrency)
        self.start_at = start_at
        self._phase_at = [p.at_s for p in config.schedule]
        self._phases = list(config.schedule)
        self.override: tuple[str, float] | None = None
        self.counters = Counters()
        self.median_s = config.service_time.median_ms / 1000.0
        self._times = ServiceTimes(self.median_s, config.service_time.sigma, config.seed, block=1024)
        """The model's own stream (harness/sim/downstream_model.py): a virtual twin's k-th call takes
        the time this one's k-th call takes."""

    def health(self, now: float | None = None) -> tuple[str, float]:
        """(phase name, service-time factor) at ``now``: the override, else the schedule."""
        if self.override is not None:
            return self.override
        phase = self.phase(time.time() if now is None else now)
        if phase is None:
            return ("healthy", 1.0)
        return (phase.health, phase.factor if phase.health == "degraded" else 1.0)

    def phase(self, now: float) -> Phase | None:
        """The scheduled phase at ``now`` (None before the first)."""
        i = bisect.bisect_right(self._phase_at, now - self.start_at)
        return self._phases[i - 1] if i else None

    def set_health(self, health: str, factor: float = 1.0) -> None:
        self.override = (health, factor if health == "degraded" else 1.0)

    def service_time(self) -> float:
        """This call's duration: a lognormal draw shaped by the health phase (an admin override
        first, else the schedule's phase: ``downstream_phases.call_duration``)."""
        base = self._times.next()
        now = time.time()
        phase = None if self.override is not None else self.phase(now)
        if phase is None:
            health, factor = self.health(now)
            return base * factor if health == "degraded" else base
        return call_duration(phase.health, base, now - self.start_at - phase.at_s, phase.factor,
                             phase.latency_ms, phase.period_s, phase.pause_ms)

    async def call(self) -> None:
        """One unit of downstream work: wait for a slot, then the service time; during an
        outage, raise ``Unavailable`` (a 503) at once."""
        c = self.counters
        if self.health()[0] == OUTAGE:
            c.failed += 1
            raise Unavailable()
        c.calls += 1
        c.waiting += 1
        try:
            await self.slots.acquire()
        finally:
            c.waiting -= 1  # also when the client went away while queued
        c.in_flight += 1
        try:
            wait = self.service_time()
            if wait > 0:
                await asyncio.sleep(wait)
        finally:
            c.in_flight -= 1
            c.completed += 1
            self.slots.release()
