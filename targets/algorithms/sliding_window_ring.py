"""Sliding window over a ring of sub-windows: W split into ``buckets`` aligned sub-windows of
W / buckets; a request is admitted when the cost in the last ``buckets`` sub-windows (the
current one included) plus its own is at most L.

The effective window is between W - W/N and W long, so at most 2L can pass in a window W, but
never inside less than W - W/N: the granularity bounds how fast an excess can arrive.

Time is whole µs (``base.US``), so a sub-window edge is exact whenever W / N is a whole number
of µs.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil, floor
from typing import Annotated, ClassVar

from contract.params import Bounds

from .base import INF, Algorithm, Decision, derive, micros, new_decision
from .policy import Policy, PolicyError, require_positive

# (sub-window ids, their costs, total) for the sub-windows still inside the ring, oldest first
State = tuple[tuple[int, ...], tuple[float, ...], float]


@dataclass(frozen=True)
class Params:
    limit: float
    window_s: float
    buckets: Annotated[int, Bounds(1, 10_000)] = 10
    width_us: ClassVar[float]
    """One sub-window, µs."""

    def __post_init__(self) -> None:
        require_positive(self, "limit", "window_s")
        if self.buckets < 1:
            raise PolicyError(f"buckets must be at least 1, got {self.buckets}")
        derive(self, width_us=micros(self.window_s) / self.buckets)


def from_policy(policy: Policy) -> Params:
    return Params(policy.limit, policy.window_s)


def decide(state: State | None, now: float, cost: float, p: Params) -> tuple[Decision, State]:
    n, width, t = p.buckets, p.width_us, (now * 1e6 + 0.5) // 1.0
    sub = floor(t / width)
    if state is None:
        ids: tuple[int, ...] = ()
        costs: tuple[float, ...] = ()
        total = 0.0
    else:
        ids, costs, total = state
        oldest_alive = sub - n + 1
        if ids and ids[0] < oldest_alive:
            gone = 0
            while gone < len(ids) and ids[gone] < oldest_alive:
                total -= costs[gone]
                gone += 1
            ids, costs = ids[gone:], costs[gone:]
            if not ids:
                total = 0.0
    if total + cost <= p.limit:
        if ids and ids[-1] == sub:
            costs = (*costs[:-1], costs[-1] + cost)
        else:
            ids += (sub,)
            costs += (cost,)
        total += cost
        reset = ((ids[-1] + n) * width - t) / 1e6
        return new_decision(Decision, (True, p.limit - total, 0.0, reset, 0.0)), (ids, costs, total)
    retry = INF
    if cost <= p.limit:
        must_expire = total + cost - p.limit
        freed = 0.0
        for sub_id, c in zip(ids, costs):
            freed += c
            if freed >= must_expire:
                retry = ceil((sub_id + n) * width - t) / 1e6
                break
    reset = ((ids[-1] + n) * width - t) / 1e6 if ids else 0.0
    return new_decision(Decision, (False, max(0.0, p.limit - total), retry, reset, 0.0)), (ids, costs, total)


ALGORITHM = Algorithm(
    name="sliding_window_ring",
    summary="ring of N sub-window counts (granularity W/N); 2L adversarial but never inside < W - W/N",
    params_type=Params,
    params_from_policy=from_policy,
    decide=decide,
    state_ttl=lambda p: p.window_s,
    max_cost=lambda p: p.limit,
)
