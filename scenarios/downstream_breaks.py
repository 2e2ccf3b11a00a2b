"""The downstreams that break adaptive limiters, one ``kind`` a run, each followed by a
recovery (except ``step``, which never recovers by definition):

- ``timeout``: every call hangs ``timeout_ms`` (latency stuck at a timeout: Gradient2 climbs);
- ``overload``: the downstream stays healthy, the offered rate goes to ``overload`` x its
  capacity (mild sustained overload: Gradient2 creeps up);
- ``gc_pauses``: stop-the-world pauses of ``pause_ms`` every ``period_s`` (read as congestion);
- ``step``: the service time steps up ``factor`` times for good (a new normal, read as
  overload for ever by a rule that cannot re-measure its base latency);
- ``errors``: the downstream answers 503 at once instead of slowing (latency rules see it fast).

The scenario sets the downstream's slots and service time (``target_config``), so its capacity
(slots / mean service time) is known to the traffic. Everything is plain ``DownstreamConfig``
data: the live target and the virtual-time model honour the same phases.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import numpy as np

from contract.params import Bounds

from .base import (
    MAX_SECONDS,
    Arrivals,
    Clients,
    Factor,
    Millis,
    ModelParams,
    Multiple,
    ScenarioError,
    Seconds,
    Span,
    TrafficModel,
)
from .unhealthy_downstream import legit_items

Kind = Literal["timeout", "overload", "gc_pauses", "step", "errors"]
KINDS = ("timeout", "overload", "gc_pauses", "step", "errors")
MAX_REQUESTS = 10_000_000
"""An upper bound on the offered requests (rate x duration): a model that large is a typo."""


@dataclass(frozen=True)
class Params(ModelParams):
    kind: Kind = "timeout"
    clients: Clients = 10
    load: Multiple = 0.5
    """Offered rate outside the break, as a share of the downstream's capacity."""
    overload: Multiple = 1.1
    """kind=overload: the offered rate during the break, as a multiple of the capacity."""
    slots: Clients = 8
    median_ms: Millis = 20.0
    sigma: Factor = 0.3
    break_at_s: Seconds = 2.0
    recover_at_s: Seconds = 6.0
    duration_s: Span = 8.0
    timeout_ms: Millis = 1000.0
    period_s: Span = 1.0
    pause_ms: Annotated[float, Bounds(0, 1_000 * MAX_SECONDS)] = 200.0
    factor: Multiple = 1.5
    """kind=step: the new normal's service-time multiplier (1.5 at load 0.5: still under capacity)."""

    def check(self) -> None:
        if not math.isfinite(self.capacity_rps):
            raise ScenarioError(f"the downstream's capacity (slots / mean service time) must be finite, got "
                                f"{self.capacity_rps} from slots={self.slots}, median_ms={self.median_ms}, "
                                f"sigma={self.sigma}")
        peak = max(self.load, self.overload if self.kind == "overload" else 0.0) * self.capacity_rps
        if peak * self.duration_s > MAX_REQUESTS:
            raise ScenarioError(f"offered rate {peak:.4g}/s over duration_s={self.duration_s} would send more than "
                                f"{MAX_REQUESTS:,} requests; lower load, overload, slots or duration_s")
        if not 0 <= self.break_at_s < self.recover_at_s <= self.duration_s:
            raise ScenarioError("need 0 <= break_at_s < recover_at_s <= duration_s, got "
                                f"{self.break_at_s}, {self.recover_at_s}, {self.duration_s}")
        if not 0 <= self.pause_ms < self.period_s * 1000:
            raise ScenarioError(f"pause_ms must be in [0, period_s x 1000), got {self.pause_ms}")

    @property
    def capacity_rps(self) -> float:
        """Slots over the lognormal's mean service time."""
        return self.slots / (self.median_ms / 1000.0 * math.exp(self.sigma**2 / 2))

    def schedule(self) -> list[dict[str, Any]]:
        broken: dict[str, Any] = {
            "timeout": {"health": "stuck", "latency_ms": self.timeout_ms},
            "overload": {"health": "healthy"},
            "gc_pauses": {"health": "paused", "period_s": self.period_s, "pause_ms": self.pause_ms},
            "step": {"health": "degraded", "factor": self.factor},
            "errors": {"health": "outage"},
        }[self.kind]
        phases = [{"at_s": 0.0, "health": "healthy"}, {"at_s": self.break_at_s, **broken}]
        if self.kind != "step":
            phases.append({"at_s": self.recover_at_s, "health": "recovered"})
        return phases


class DownstreamBreaks(TrafficModel):
    name = "downstream_breaks"
    summary = ("the downstreams that break adaptive limiters (kind=timeout, overload, gc_pauses, step, errors), "
               "then recovery")

    p: Params

    def overload_window(self) -> tuple[float, float] | None:
        """kind=overload: when the offered rate is over capacity (the downstream stays healthy,
        so the schedule does not say it)."""
        return (self.p.break_at_s, self.p.recover_at_s) if self.p.kind == "overload" else None

    def target_config(self) -> dict[str, Any]:
        p = self.p
        return {"downstream": {"concurrency": p.slots, "service_time": {"median_ms": p.median_ms, "sigma": p.sigma},
                               "schedule": self.p.schedule()}}

    def expected_requests(self) -> float:
        p = self.p
        extra = (p.overload - p.load) * (p.recover_at_s - p.break_at_s) if p.kind == "overload" else 0.0
        return p.capacity_rps * (p.load * p.duration_s + extra)

    def generate(self) -> Arrivals:
        """Poisson arrivals at ``load`` x capacity, at ``overload`` x capacity during an overload break."""
        p = self.p
        rng = np.random.default_rng(self.seed)
        base = p.load * p.capacity_rps
        spans = [(0.0, p.duration_s, base)]
        if p.kind == "overload":
            spans = [(0.0, p.break_at_s, base), (p.break_at_s, p.recover_at_s, p.overload * p.capacity_rps),
                     (p.recover_at_s, p.duration_s, base)]
        times = np.sort(np.concatenate([rng.uniform(a, b, rng.poisson(rate * (b - a))) for a, b, rate in spans]))
        return legit_items(times, rng, p.clients)
