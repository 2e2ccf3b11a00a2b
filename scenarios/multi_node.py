"""K target nodes behind a balancer, one skewed client well above the limit plus background
clients: what limit does the fleet really enforce, against the advertised L?

The skewed client (class ``abusive``: it is the key under test) sends ``skew`` x L/W; with
``local`` limits and round-robin routing each node sees 1/K of it, so the fleet admits about
K x L (min(skew, K) x L); sticky routing puts it on one node, where ``local`` limit/N cuts it to
L/N. ``add_node_at_s`` adds a node mid-run (autoscale): with local limits, one more L.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import numpy as np

from contract.params import Bounds
from contract.routes import ITEMS

from .base import (
    ABUSIVE,
    LEGIT,
    Arrivals,
    Count,
    ModelParams,
    Multiple,
    ScenarioError,
    Seconds,
    Span,
    TrafficModel,
)
from .fleet import Fleet, Routing, VirtualStore

SKEWED = "skewed"


@dataclass(frozen=True)
class Params(ModelParams):
    nodes: Annotated[int, Bounds(1, 1_000)] = 3
    """K: target nodes from the start."""
    routing: Routing = "round_robin"
    """round_robin or sticky (hash of the client id)."""
    skew: Multiple = 4.0
    """The skewed client's rate as a multiple of L/W."""
    clients: Count = 4
    """Background clients, each at ``load`` x L/W on its own key."""
    load: Multiple = 0.3
    duration_s: Span | None = None
    """Defaults to 4 windows."""
    add_node_at_s: Seconds = 0.0
    """0: no autoscale; else one more node takes traffic from this time on."""
    virtual_store: VirtualStore = "local"
    """``simulate`` only: local, local_split or shared (live runs use the campaign's store)."""



class MultiNode(TrafficModel):
    name = "multi_node"
    summary = "K nodes, round-robin or sticky routing, a skewed client, optional autoscale: the limit the fleet enforces"

    p: Params

    def __init__(self, limit: float, window_s: float, seed: int, params: Params) -> None:
        super().__init__(limit, window_s, seed, params)
        if params.add_node_at_s >= self.duration_s:
            raise ScenarioError(f"add_node_at_s must be before the end ({self.duration_s:g} s), got {params.add_node_at_s:g}")

    @property
    def duration_s(self) -> float:
        return self.p.duration_s or 4 * self.window_s

    def fleet(self) -> Fleet:
        joins = (0.0,) * self.p.nodes + ((self.p.add_node_at_s,) if self.p.add_node_at_s > 0 else ())
        return Fleet(joins, self.p.routing, self.p.virtual_store)

    def expected_requests(self) -> float:
        return (self.p.skew + self.p.load * self.p.clients) * self.limit / self.window_s * self.duration_s

    def generate(self) -> Arrivals:
        p, rng, d = self.p, np.random.default_rng(self.seed), self.duration_s
        rate = self.limit / self.window_s
        n_skew = rng.poisson(p.skew * rate * d)
        counts = rng.poisson(p.load * rate * d, p.clients)
        times = np.concatenate([rng.uniform(0.0, d, n_skew), rng.uniform(0.0, d, int(counts.sum()))])
        ids = np.concatenate([np.full(n_skew, SKEWED, dtype=object),
                              np.repeat(np.array([f"client-{i}" for i in range(p.clients)], dtype=object), counts)])
        classes = np.where(ids == SKEWED, ABUSIVE, LEGIT).astype(object)
        n = len(times)
        return Arrivals.from_columns(times, ids, classes, np.full(n, ITEMS.model_name, dtype=object), np.ones(n))
