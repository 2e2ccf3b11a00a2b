"""Concurrency limit: at most ``max_in_flight`` cost units being served at once.

Not a rate limit: it bounds work in progress, so it needs ``release`` when a request finishes.
``hold_s`` is the Retry-After hint, since when a slot frees depends on the downstream, not on
the limiter (the simulator frees it at the simulated completion: harness/sim/system.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .base import INF, Algorithm, Decision, new_decision
from .policy import Policy, require_positive

State = float  # cost units in flight


@dataclass(frozen=True, slots=True)
class Params:
    max_in_flight: float
    hold_s: float = 0.1

    def __post_init__(self) -> None:
        require_positive(self, "max_in_flight", "hold_s")


def from_policy(policy: Policy) -> Params:
    return Params(policy.effective_burst)


def decide(state: State | None, now: float, cost: float, p: Params) -> tuple[Decision, State]:
    in_flight = state or 0.0
    if in_flight + cost <= p.max_in_flight:
        in_flight += cost
        return new_decision(Decision, (True, p.max_in_flight - in_flight, 0.0, p.hold_s, 0.0)), in_flight
    retry = p.hold_s if cost <= p.max_in_flight else INF
    return new_decision(Decision, (False, p.max_in_flight - in_flight, retry, p.hold_s, 0.0)), in_flight


def release(state: State | None, now: float, cost: float, p: Params) -> State:
    return max(0.0, (state or 0.0) - cost)


ALGORITHM = Algorithm(
    name="concurrency",
    summary="at most N cost units in flight (acquire on admit, release on completion)",
    params_type=Params,
    params_from_policy=from_policy,
    decide=decide,
    state_ttl=lambda p: math.inf,  # in-flight counts must never expire while requests run
    max_cost=lambda p: p.max_in_flight,
    release=release,
)
