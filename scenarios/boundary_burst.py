"""B requests just before a fixed-window boundary and B just after it, at several boundaries.

The fixed window's worst case: with B = L, 2L pass inside 2 * delta. Boundaries are every other
one (W, 3W, 5W, ...) so each pair meets a limiter that has fully recovered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import numpy as np

from contract.params import Bounds
from contract.routes import ITEMS

from .base import (
    ABUSIVE,
    Arrivals,
    ModelParams,
    ScenarioError,
    Span,
    TrafficModel,
)


@dataclass(frozen=True)
class Params(ModelParams):
    size: Annotated[int, Bounds(1, 1_000_000)] | None = None
    """Requests on each side of the boundary; defaults to the limit L."""
    delta_s: Span = 0.1
    """Each half of the burst lands within this many seconds of the boundary."""
    boundaries: Annotated[int, Bounds(1, 10_000)] = 3
    instant: bool = False
    """true: each half fires at one instant (delta/2 before and after the edge), as a live burst
    does; false: spread uniformly over delta."""



class BoundaryBurst(TrafficModel):
    name = "boundary_burst"
    summary = "B requests just before and B just after a window boundary (delta 100 ms), repeated"

    p: Params

    def __init__(self, limit: float, window_s: float, seed: int, params: Params) -> None:
        if params.delta_s >= window_s:
            raise ScenarioError(f"delta_s must be shorter than the window ({window_s} s), got {params.delta_s}")
        super().__init__(limit, window_s, seed, params)

    def expected_requests(self) -> float:
        return 2 * (self.p.size or max(1, int(self.limit))) * self.p.boundaries

    def generate(self) -> Arrivals:
        p = self.p
        rng = np.random.default_rng(self.seed)
        size = p.size or max(1, int(self.limit))
        chunks = []
        for i in range(p.boundaries):
            edge = (2 * i + 1) * self.window_s
            if p.instant:
                chunks += [np.full(size, edge - p.delta_s / 2), np.full(size, edge + p.delta_s / 2)]
                continue
            chunks.append(rng.uniform(edge - p.delta_s, edge, size))
            # after the edge: [edge, edge + delta); the edge itself belongs to the new window
            chunks.append(edge + rng.uniform(0.0, p.delta_s, size))
        times = np.concatenate(chunks)
        n = len(times)
        return Arrivals.from_columns(
            times, np.full(n, "attacker", dtype=object), np.full(n, ABUSIVE, dtype=object),
            np.full(n, ITEMS.model_name, dtype=object), np.ones(n),
        )
