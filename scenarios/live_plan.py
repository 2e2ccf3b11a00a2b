"""The bridge from a traffic model to live HTTP: the plan a Locust worker replays.

Pure and Locust-free, so it is tested exactly. A plan file (JSON, written by the harness) names
the model, its seed and parameters, the policy, the target and the wall-clock instant the model's
t = 0 maps to (a multiple of W, so the model's window edges are the target's). Every worker
rebuilds the same arrivals and takes every n-th request, so each burst is split across workers
and fired by all of them at the same deadline. Requests within ``burst_gap_s`` of each other
form one group: one deadline, one release.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import build_model
from .base import Arrivals

ROUTES: dict[str, tuple[str, str]] = {
    "GET /api/items": ("GET", "/api/items"),
    "GET /api/search": ("GET", "/api/search"),
    "POST /api/reports": ("POST", "/api/reports"),
    "POST /login": ("POST", "/login"),
}
"""Model route names -> (method, path) of the target."""


@dataclass(frozen=True)
class LivePlan:
    scenario: str
    limit: float
    window_s: float
    seed: int
    start_at: float
    """Epoch seconds that the model's t = 0 maps to."""
    hosts: list[str]
    client_dir: str
    """Each worker writes its raw client log here (one Parquet file per worker process)."""
    workers: int = 1
    params: dict[str, str] = field(default_factory=dict)
    burst_gap_s: float = 0.002

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=2), encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> LivePlan:
        return cls(**json.loads(Path(path).read_text(encoding="utf-8")))

    def arrivals(self) -> Arrivals:
        return build_model(self.scenario, self.limit, self.window_s, self.seed, self.params).arrivals()


@dataclass(frozen=True)
class Shot:
    """One request of a worker's share."""

    index: int
    t: float
    method: str
    path: str
    headers: dict[str, str]


def worker_share(arrivals: Arrivals, worker: int, workers: int) -> list[Shot]:
    """Every ``workers``-th request, starting at ``worker``, with the headers the target keys on."""
    shots = []
    for i in range(worker, len(arrivals), workers):
        method, path = ROUTES.get(arrivals.route[i], ("GET", "/api/items"))
        headers = {
            "x-api-key": arrivals.key[i],
            "x-client-id": arrivals.client_id[i],
            "x-client-class": arrivals.client_class[i],
            "x-request-id": f"r{i}",
        }
        shots.append(Shot(i, arrivals.t[i], method, path, headers))
    return shots


def groups(shots: list[Shot], gap_s: float) -> list[list[Shot]]:
    """Consecutive shots no more than ``gap_s`` after the group's first one fire together."""
    out: list[list[Shot]] = []
    for shot in shots:
        if out and shot.t - out[-1][0].t <= gap_s:
            out[-1].append(shot)
        else:
            out.append([shot])
    return out


def aligned_start(now: float, lead_s: float, window_s: float) -> float:
    """The first multiple of W at least ``lead_s`` from now: windows on the target's clock are
    aligned to multiples of W, so the model's edges land on real edges."""
    return math.ceil((now + lead_s) / window_s) * window_s
