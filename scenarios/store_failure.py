"""Clients above their limit while the shared store (Redis) is stopped mid-run and restarted.

Traffic only: the live runner stops its own redis-server at ``outage_at_s`` and starts it again
at ``restore_at_s`` (the model's ``outage()``), and reports requests admitted during the outage
against the fallback limit, errors shown to clients (none with fail-open) and the time until
decisions are shared again. In ``simulate`` it is plain traffic on one store (no Redis there).
"""

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
    ScenarioError,
    Seconds,
    Span,
    TrafficModel,
)


@dataclass(frozen=True)
class Params(ModelParams):
    clients: Clients = 4
    load: Multiple = 1.5
    """Each client's rate as a multiple of L/W (above 1: the limit, and the fallback's, bind)."""
    duration_s: Span | None = None
    """Defaults to 6 windows."""
    outage_at_s: Seconds = 2.0
    restore_at_s: Seconds = 4.0

    def check(self) -> None:
        if self.restore_at_s <= self.outage_at_s:
            raise ScenarioError(f"restore_at_s must be after outage_at_s ({self.outage_at_s:g}), got {self.restore_at_s:g}")


class StoreFailure(TrafficModel):
    name = "store_failure"
    summary = "Redis stopped mid-run and restarted: fallback admissions, client errors, time back to shared"

    p: Params

    def __init__(self, limit: float, window_s: float, seed: int, params: Params) -> None:
        super().__init__(limit, window_s, seed, params)
        if params.restore_at_s >= self.duration_s:
            raise ScenarioError(f"restore_at_s must be before the end ({self.duration_s:g} s), got {params.restore_at_s:g}")

    @property
    def duration_s(self) -> float:
        return self.p.duration_s or 6 * self.window_s

    def outage(self) -> tuple[float, float]:
        """(stop, restart) of the shared store, in model time."""
        return self.p.outage_at_s, self.p.restore_at_s

    def expected_requests(self) -> float:
        return self.p.clients * self.p.load * self.limit / self.window_s * self.duration_s

    def generate(self) -> Arrivals:
        p, rng, d = self.p, np.random.default_rng(self.seed), self.duration_s
        counts = rng.poisson(p.load * self.limit / self.window_s * d, p.clients)
        times = rng.uniform(0.0, d, int(counts.sum()))
        ids = np.repeat(np.array([f"client-{i}" for i in range(p.clients)], dtype=object), counts)
        n = len(times)
        return Arrivals.from_columns(times, ids, np.full(n, LEGIT, dtype=object),
                                     np.full(n, ITEMS.model_name, dtype=object), np.ones(n))
