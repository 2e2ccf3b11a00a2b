"""The worst case hunted at both kinds of window edge, each on a key of its own.

``boundary_burst`` aims at the clock's edges only (multiples of W): a window that each key's
first request opens (limits' and so slowapi's fixed window, most gateways' "per key" windows)
meets that burst mid-window and holds it to L, while bursts at its own edge get 2L - 1 through.
Each round here sends both:

- a *first-hit* key: one request opens its window half a W after a clock edge, L - 1 go just
  before that window's end and L just after (the opener spent one of the first window's L);
- a *clock* key: L just before a clock edge and L just after, as ``boundary_burst`` does.

A clock-aligned window admits 2L to the clock key and L to the first-hit key; a first-hit
window 2L - 1 to the first-hit key and L to the clock key; a sliding log L to each. The
campaign's worst-case headline takes the most admitted in any W over all its runs, so a
campaign that carries this scenario finds either edge. It aims at the run's stated L and W:
``run_bench.py judge URL`` learns them first for an endpoint whose policy is unknown
(docs/peers.md). Rounds are 4W apart so each key meets a limiter that has recovered.
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

ROUND_W = 4
"""A round's length in W: the first-hit key's opener at 0.5 W and its edge at 1.5 W, the clock
key's edge at 3 W; each key's quota is whole again before the next round."""


@dataclass(frozen=True)
class Params(ModelParams):
    size: Annotated[int, Bounds(1, 1_000_000)] | None = None
    """Requests after each edge (before it: the same, less the first-hit key's opener); defaults to L."""
    delta_s: Span = 0.1
    """Each burst fires this far from its edge, half before and half after (a burst's spread on a
    busy machine must stay inside it)."""
    rounds: Annotated[int, Bounds(1, 10_000)] = 2



class EdgeHunt(TrafficModel):
    name = "edge_hunt"
    summary = "bursts at each key's own window edge (opened by its first request) and at the clock's, keys of their own"

    p: Params

    def __init__(self, limit: float, window_s: float, seed: int, params: Params) -> None:
        if params.delta_s >= window_s / 2:
            raise ScenarioError(f"delta_s must be shorter than half the window ({window_s / 2:g} s), got {params.delta_s}")
        super().__init__(limit, window_s, seed, params)

    def _size(self) -> int:
        return self.p.size or max(1, int(self.limit))

    def expected_requests(self) -> float:
        return 4 * self._size() * self.p.rounds

    def generate(self) -> Arrivals:
        size, w, half = self._size(), self.window_s, self.p.delta_s / 2
        times: list[np.ndarray] = []
        clients: list[np.ndarray] = []
        for i in range(self.p.rounds):
            start = ROUND_W * w * i
            first_edge, clock_edge = start + 1.5 * w, start + 3 * w
            first = [np.array([start + 0.5 * w]), np.full(size - 1, first_edge - half), np.full(size, first_edge + half)]
            clock = [np.full(size, clock_edge - half), np.full(size, clock_edge + half)]
            times += [*first, *clock]
            clients += [np.full(2 * size, f"hunt-first-{i}", dtype=object), np.full(2 * size, f"hunt-clock-{i}", dtype=object)]
        t = np.concatenate(times)
        n = len(t)
        return Arrivals.from_columns(t, np.concatenate(clients), np.full(n, ABUSIVE, dtype=object),
                                     np.full(n, ITEMS.model_name, dtype=object), np.ones(n))
