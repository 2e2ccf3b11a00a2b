"""GCRA (generic cell rate algorithm): one number per key, the theoretical arrival time (TAT).

A request of cost c is admitted when TAT' = max(TAT, now) + c*T is at most now + burst*T, where
T = W / L is the emission interval. It makes the same decisions as a token bucket of capacity
``burst`` refilled at L/W, with a single float of state (what Redis-based limiters store).
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import INF, Algorithm, Decision, new_decision
from .policy import Policy, require_positive

State = float  # theoretical arrival time


@dataclass(frozen=True, slots=True)
class Params:
    interval_s: float
    """Emission interval T: seconds per cost unit (W / L)."""
    burst: float
    """Cost units admissible at once."""

    def __post_init__(self) -> None:
        require_positive(self, "interval_s", "burst")


def from_policy(policy: Policy) -> Params:
    return Params(policy.window_s / policy.limit, policy.effective_burst)


def decide(state: State | None, now: float, cost: float, p: Params) -> tuple[Decision, State]:
    tat = now if state is None or state < now else state
    tolerance = p.burst * p.interval_s
    new_tat = tat + cost * p.interval_s
    if new_tat - now <= tolerance:
        remaining = (tolerance - (new_tat - now)) / p.interval_s
        return new_decision(Decision, (True, max(0.0, remaining), 0.0, new_tat - now, 0.0)), new_tat
    retry = new_tat - tolerance - now if cost <= p.burst else INF
    remaining = max(0.0, (tolerance - (tat - now)) / p.interval_s)
    return new_decision(Decision, (False, remaining, retry, tat - now, 0.0)), tat


ALGORITHM = Algorithm(
    name="gcra",
    summary="theoretical arrival time, one float per key; token-bucket decisions (burst + rW)",
    params_type=Params,
    params_from_policy=from_policy,
    decide=decide,
    state_ttl=lambda p: p.burst * p.interval_s,
    max_cost=lambda p: p.burst,
)
