"""Steady Poisson traffic from well-behaved clients, each at a share of the limit."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from contract.routes import ITEMS

from .base import (
    LEGIT,
    Arrivals,
    Clients,
    ModelParams,
    Multiple,
    Span,
    TrafficModel,
)


@dataclass(frozen=True)
class Params(ModelParams):
    clients: Clients = 10
    load: Multiple = 0.8
    """Each client's mean rate as a fraction of the policy rate L/W."""
    duration_s: Span | None = None
    """Defaults to 5 windows."""



class Steady(TrafficModel):
    name = "steady"
    summary = "Poisson arrivals from N legitimate clients, each at a share of the limit"

    p: Params

    def expected_requests(self) -> float:
        return self.p.clients * self.p.load * self.limit / self.window_s * (self.p.duration_s or 5 * self.window_s)

    def generate(self) -> Arrivals:
        p = self.p
        rng = np.random.default_rng(self.seed)
        duration = p.duration_s or 5 * self.window_s
        rate = p.load * self.limit / self.window_s
        counts = rng.poisson(rate * duration, p.clients)
        times = rng.uniform(0.0, duration, int(counts.sum()))
        ids = np.repeat(np.array([f"client-{i}" for i in range(p.clients)], dtype=object), counts)
        n = len(times)
        return Arrivals.from_columns(
            times, ids, np.full(n, LEGIT, dtype=object), np.full(n, ITEMS.model_name, dtype=object),
            np.ones(n),
        )
