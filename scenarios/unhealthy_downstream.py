"""Open-model arrivals at a fixed rate while the downstream goes healthy -> degraded ->
recovered (the target's health schedule, shared start time).

The traffic itself is steady: what changes is the service behind the limiter. Live runs and
virtual ones (harness/sim/system.py models the same downstream) measure what each limiter does
to latency (from the intended send time) when the service slows down.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from contract.routes import ITEMS

from .base import LEGIT, Arrivals, Clients, ModelParams, Multiple, OfferedRate, ScenarioError, Seconds, Span, TrafficModel


@dataclass(frozen=True)
class Params(ModelParams):
    clients: Clients = 10
    rate_rps: OfferedRate = 150.0
    """Total arrival rate, shared evenly by the clients (open model: nobody waits for replies).
    The defaults are the default campaign's: past a 16-slot, 10 ms downstream while it is 20x slower."""
    degrade_at_s: Seconds = 1.5
    recover_at_s: Seconds = 3.0
    factor: Multiple = 20.0
    """Service-time multiplier while degraded."""
    duration_s: Span = 4.0

    def check(self) -> None:
        if not 0 <= self.degrade_at_s < self.recover_at_s <= self.duration_s:
            raise ScenarioError("need 0 <= degrade_at_s < recover_at_s <= duration_s, got "
                                f"{self.degrade_at_s}, {self.recover_at_s}, {self.duration_s}")

    def schedule(self) -> list[dict[str, float | str]]:
        """The downstream health phases, in the target's config format."""
        return [
            {"at_s": 0.0, "health": "healthy"},
            {"at_s": self.degrade_at_s, "health": "degraded", "factor": self.factor},
            {"at_s": self.recover_at_s, "health": "recovered"},
        ]


class UnhealthyDownstream(TrafficModel):
    name = "unhealthy_downstream"
    summary = "steady open-model arrivals while the downstream goes healthy -> degraded -> recovered"

    p: Params

    def target_config(self) -> dict[str, Any]:
        """The health schedule, counted from the plan's t = 0 (the runner's shared start time)."""
        return {"downstream": {"schedule": self.p.schedule()}}

    def expected_requests(self) -> float:
        return self.p.rate_rps * self.p.duration_s

    def generate(self) -> Arrivals:
        p = self.p
        rng = np.random.default_rng(self.seed)
        count = rng.poisson(p.rate_rps * p.duration_s)
        return legit_items(rng.uniform(0.0, p.duration_s, count), rng, p.clients)


def legit_items(times: np.ndarray, rng: np.random.Generator, clients: int) -> Arrivals:
    """Legitimate cost-1 ``GET /api/items`` at ``times``, each from one of ``clients`` drawn at random."""
    count = len(times)
    ids = np.array([f"client-{i}" for i in rng.integers(0, clients, count)], dtype=object)
    return Arrivals.from_columns(times, ids, np.full(count, LEGIT, dtype=object),
                                 np.full(count, ITEMS.model_name, dtype=object), np.ones(count))
