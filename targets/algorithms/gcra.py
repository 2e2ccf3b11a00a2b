"""GCRA (generic cell rate algorithm): one number per key, the theoretical arrival time (TAT).

A request of cost c is admitted when TAT' = max(TAT, now) + c*T is at most now + burst*T, where
T = W / L is the emission interval. It makes the same decisions as a token bucket of capacity
``burst`` refilled at L/W, with a single number of state (what Redis-based limiters store).

Time is whole µs (``base.US``): the TAT is stored in µs, and when T is a whole number of µs
(100 per 60 s: T = 600000 µs) every quantity is an integer, so a client paced exactly T apart
is admitted every time.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil
from typing import ClassVar

from .base import INF, Algorithm, Decision, derive, micros, new_decision
from .policy import Policy, require_positive

State = float  # theoretical arrival time, µs


@dataclass(frozen=True)
class Params:
    interval_s: float
    """Emission interval T: seconds per cost unit (W / L)."""
    burst: float
    """Cost units admissible at once."""
    interval_us: ClassVar[float]
    tolerance_us: ClassVar[float]

    def __post_init__(self) -> None:
        require_positive(self, "interval_s", "burst")
        interval = micros(self.interval_s)
        derive(self, interval_us=interval, tolerance_us=self.burst * interval)


def from_policy(policy: Policy) -> Params:
    return Params(policy.window_s / policy.limit, policy.effective_burst)


def decide(state: State | None, now: float, cost: float, p: Params) -> tuple[Decision, State]:
    t = (now * 1e6 + 0.5) // 1.0
    interval, tolerance = p.interval_us, p.tolerance_us
    tat = t if state is None or state < t else state
    new_tat = tat + cost * interval
    if new_tat - t <= tolerance:
        remaining = (tolerance - (new_tat - t)) / interval
        return new_decision(Decision, (True, max(0.0, remaining), 0.0, (new_tat - t) / 1e6, 0.0)), new_tat
    retry = ceil(new_tat - tolerance - t) / 1e6 if cost <= p.burst else INF
    remaining = max(0.0, (tolerance - (tat - t)) / interval)
    return new_decision(Decision, (False, remaining, retry, (tat - t) / 1e6, 0.0)), tat


ALGORITHM = Algorithm(
    name="gcra",
    summary="theoretical arrival time, one float per key; token-bucket decisions (burst + rW)",
    params_type=Params,
    params_from_policy=from_policy,
    decide=decide,
    state_ttl=lambda p: p.burst * p.interval_s,
    max_cost=lambda p: p.burst,
)
