"""An open-loop offered rate rising linearly from ``start_rps`` to ``end_rps`` over the run: the
high-QPS comparison's load, from well under a downstream's capacity to well above it.

The rate is lambda(t) = a + (b - a) t / D, so the expected count by t is
N(t) = a t + (b - a) t^2 / (2 D). Arrival i sits at N^-1(i + u_i), u_i seeded uniform in [0, 1):
one arrival in each unit of N, jittered inside it. Unlike a Poisson ramp, the count in any
interval is within one of N's increase over it, so every second of the run offers the rate of the
line (the analysis bins by offered rate and needs each bin to be that rate, not that rate +-
Poisson noise), and the traffic still has no lockstep a limiter could resonate with.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated

import numpy as np

from contract.params import Bounds
from contract.routes import ITEMS

from .base import (
    LEGIT,
    Arrivals,
    Clients,
    ModelParams,
    Rate,
    ScenarioError,
    Span,
    TrafficModel,
)


@dataclass(frozen=True)
class Params(ModelParams):
    start_rps: Rate = 100.0
    """Offered rate at t = 0 (requests/s, all clients together)."""
    end_rps: Rate = 1000.0
    """Offered rate at t = duration_s."""
    duration_s: Span = 30.0
    clients: Clients = 100
    """Distinct clients, each request dealt to one of them at random."""
    shared_key: bool = True
    """true: every client sends the same key, so the limit L/W caps the total offered rate, as a
    limit that protects one downstream does; false: each client its own key (L/W each)."""
    p99_bound_ms: Annotated[float, Bounds(0, 3_600_000, above=True)] | None = None
    """The P99 (from the intended send) a bin may not exceed to count as sustained; None: the
    analysis' default (docs/analysis.md). Read by the analysis only."""
    bin_s: Span | None = None
    """Width of the analysis' offered-rate bins; None: its default (1 s). Read by the analysis only."""

    def check(self) -> None:
        if self.start_rps + self.end_rps <= 0:
            raise ScenarioError("start_rps and end_rps cannot both be 0")
        if self.bin_s is not None and self.bin_s > self.duration_s:
            raise ScenarioError(f"bin_s ({self.bin_s}) must not exceed duration_s ({self.duration_s})")

    def rate_at(self, t: float) -> float:
        return self.start_rps + (self.end_rps - self.start_rps) * t / self.duration_s

    def expected(self, t: float) -> float:
        """N(t): the expected number of arrivals in [0, t)."""
        return self.start_rps * t + (self.end_rps - self.start_rps) * t * t / (2.0 * self.duration_s)


def inverse_count(n: np.ndarray, a: float, b: float, duration: float) -> np.ndarray:
    """N^-1(n) for N(t) = a t + (b - a) t^2 / (2 D): t = 2n / (a + sqrt(a^2 + 2 c n)), c = (b - a) / D.
    This form of the root has no cancellation, and holds for c = 0 and for falling ramps."""
    c = (b - a) / duration
    return 2.0 * n / (a + np.sqrt(np.maximum(a * a + 2.0 * c * n, 0.0)))


class Ramp(TrafficModel):
    name = "ramp"
    summary = "an open-loop offered rate rising linearly from start_rps to end_rps: where each limiter stops keeping up"

    p: Params

    def ramp(self) -> tuple[float, float]:
        """Model seconds the ramp spans (the live runner records it as run.json's ``ramp`` phase)."""
        return 0.0, self.p.duration_s

    def expected_requests(self) -> float:
        return self.p.expected(self.p.duration_s)

    def generate(self) -> Arrivals:
        p = self.p
        rng = np.random.default_rng(self.seed)
        count = math.floor(p.expected(p.duration_s) + 1e-9)
        times = inverse_count(np.arange(count) + rng.uniform(0.0, 1.0, count), p.start_rps, p.end_rps, p.duration_s)
        times = np.minimum(times, np.nextafter(p.duration_s, 0.0))  # float noise at the very end stays inside
        names = np.array([f"client-{i}" for i in range(p.clients)], dtype=object)
        ids = names[rng.integers(0, p.clients, count)]
        keys = _same("ramp", count) if p.shared_key else ids
        return Arrivals.from_columns(times, ids, _same(LEGIT, count), _same(ITEMS.model_name, count), np.ones(count), keys)


def _same(value: str, count: int) -> np.ndarray:
    """``count`` references to one string (``np.full`` would make ``count`` strings: ~60 bytes each)."""
    return np.array([value], dtype=object).repeat(count)
