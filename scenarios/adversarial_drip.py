"""An attacker who spends a burst right before a window boundary, then drips: each rejection is
retried exactly when Retry-After says, each admission is followed at once by another request.

It takes every admission the limiter allows, which is how the sliding window counter's real
worst case (close to 2L in a sliding window) shows up, while the sliding log holds at L.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated

import numpy as np

from contract.params import Bounds
from contract.routes import ITEMS

from .base import (
    ABUSIVE,
    MAX_SECONDS,
    Arrivals,
    DecisionLike,
    ModelParams,
    Request,
    ScenarioError,
    Span,
    TrafficModel,
)

ROUTE = ITEMS.model_name
KEY = "attacker"
BURST_ID, DRIP_ID = "attacker-burst", "attacker-drip"


@dataclass(frozen=True)
class Params(ModelParams):
    burst: Annotated[int, Bounds(1, 1_000_000)] | None = None
    """Requests in the opening burst; defaults to the limit L."""
    delta_s: Span = 0.1
    """The burst lands within this many seconds before the boundary."""
    min_gap_s: Annotated[float, Bounds(1e-6, MAX_SECONDS)] = 0.001
    """The attacker never sends faster than this (one client, one connection)."""
    duration_s: Span | None = None
    """Defaults to 3 windows."""



class AdversarialDrip(TrafficModel):
    name = "adversarial_drip"
    summary = "burst of L right before a boundary, then a drip paced by Retry-After to take every admission"
    reactive = True
    one_client_per_key = True
    """The burst and the drip are one attacker: one address."""

    p: Params

    def __init__(self, limit: float, window_s: float, seed: int, params: Params) -> None:
        if params.delta_s >= window_s:
            raise ScenarioError(f"delta_s must be shorter than the window ({window_s} s), got {params.delta_s}")
        super().__init__(limit, window_s, seed, params)
        self.end = params.duration_s or 3 * window_s

    def generate(self) -> Arrivals:
        rng = np.random.default_rng(self.seed)
        size = self.p.burst or max(1, int(self.limit))
        edge = self.window_s
        times = np.sort(rng.uniform(edge - self.p.delta_s, edge, size))
        requests = [Request(float(t), BURST_ID, ABUSIVE, KEY, ROUTE, 1.0) for t in times]
        requests.append(Request(edge, DRIP_ID, ABUSIVE, KEY, ROUTE, 1.0))
        return Arrivals.from_requests(requests)

    def horizon_s(self) -> float:
        return self.end

    def expected_requests(self) -> float:
        """The burst, then the drip at its fastest: one request per ``min_gap_s`` to the end."""
        return (self.p.burst or max(1, int(self.limit))) + self.end / self.p.min_gap_s

    def react(self, request: Request, decision: DecisionLike) -> Iterable[Request]:
        if request.client_id != DRIP_ID:
            return ()
        wait = self.p.min_gap_s if decision.allowed else max(self.p.min_gap_s, decision.retry_after_s)
        t = request.t + wait
        if math.isinf(wait) or t >= self.end:
            return ()
        # a rejected request is tried again (its next attempt); an admitted one is followed by a new one
        return (request._replace(t=t, attempt=1 if decision.allowed else request.attempt + 1),)
