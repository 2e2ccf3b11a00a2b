"""Cheap (cost 1) and expensive (cost 20) routes from the same clients, plus an abusive client
that calls only the expensive route: what cost weighting does to downstream work."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import numpy as np

from contract.params import Bounds
from contract.routes import ITEMS, REPORTS

from .base import (
    ABUSIVE,
    LEGIT,
    Arrivals,
    Clients,
    Count,
    ModelParams,
    Multiple,
    Span,
    TrafficModel,
    poisson_times,
)

CHEAP_ROUTE, EXPENSIVE_ROUTE = ITEMS.model_name, REPORTS.model_name


@dataclass(frozen=True)
class Params(ModelParams):
    clients: Clients = 10
    load: Multiple = 0.8
    """Each legitimate client's cost rate as a fraction of L/W."""
    expensive_share: Annotated[float, Bounds(0, 1)] = 0.1
    """Share of legitimate requests that go to the expensive route."""
    cheap_cost: Multiple = 1.0
    expensive_cost: Multiple = 20.0
    abusers: Count = 1
    abuse_factor: Multiple = 3.0
    """Abusive cost rate as a multiple of L/W (expensive route only)."""
    duration_s: Span | None = None



class CostMix(TrafficModel):
    name = "cost_mix"
    summary = "cheap (cost 1) and expensive (cost 20) routes from the same clients; abuser on the expensive one"

    p: Params

    @property
    def max_cost(self) -> float:
        return max(self.p.cheap_cost, self.p.expensive_cost)

    def expected_requests(self) -> float:
        p = self.p
        mean_cost = (1 - p.expensive_share) * p.cheap_cost + p.expensive_share * p.expensive_cost
        rate = self.limit / self.window_s
        return (p.clients * p.load * rate / mean_cost + p.abusers * p.abuse_factor * rate / p.expensive_cost) \
            * (p.duration_s or 5 * self.window_s)

    def generate(self) -> Arrivals:
        p = self.p
        rng = np.random.default_rng(self.seed)
        duration = p.duration_s or 5 * self.window_s
        policy_rate = self.limit / self.window_s
        mean_cost = (1 - p.expensive_share) * p.cheap_cost + p.expensive_share * p.expensive_cost
        cols: dict[str, list[np.ndarray]] = {"t": [], "id": [], "cls": [], "route": [], "cost": []}

        def add(t: np.ndarray, client: str, cls: str, expensive: np.ndarray) -> None:
            cols["t"].append(t)
            cols["id"].append(np.full(len(t), client, dtype=object))
            cols["cls"].append(np.full(len(t), cls, dtype=object))
            cols["route"].append(np.where(expensive, EXPENSIVE_ROUTE, CHEAP_ROUTE).astype(object))
            cols["cost"].append(np.where(expensive, p.expensive_cost, p.cheap_cost))

        for c in range(p.clients):
            t = poisson_times(rng, p.load * policy_rate / mean_cost, 0.0, duration)
            add(t, f"client-{c}", LEGIT, rng.random(len(t)) < p.expensive_share)
        for a in range(p.abusers):
            t = poisson_times(rng, p.abuse_factor * policy_rate / p.expensive_cost, 0.0, duration)
            add(t, f"abuser-{a}", ABUSIVE, np.ones(len(t), dtype=bool))
        return Arrivals.from_columns(*(np.concatenate(cols[k]) for k in ("t", "id", "cls", "route", "cost")))
