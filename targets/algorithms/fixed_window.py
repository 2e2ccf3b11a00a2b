"""Fixed window counter: one count per aligned window [kW, (k+1)W).

Cheapest possible state (window id, count), but a client can spend L just before a boundary and
L just after it: 2L inside any window of length W.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import floor

from .base import INF, Algorithm, Decision, new_decision
from .policy import Policy, require_positive

State = tuple[int, float]  # (window id, admitted cost in that window)


@dataclass(frozen=True, slots=True)
class Params:
    limit: float
    window_s: float

    def __post_init__(self) -> None:
        require_positive(self, "limit", "window_s")


def from_policy(policy: Policy) -> Params:
    return Params(policy.limit, policy.window_s)


def decide(state: State | None, now: float, cost: float, p: Params) -> tuple[Decision, State]:
    window = floor(now / p.window_s)  # floor(now / W), not now // W: what Redis's Lua computes
    count = state[1] if state is not None and state[0] == window else 0.0
    reset = (window + 1) * p.window_s - now
    if count + cost <= p.limit:
        count += cost
        return new_decision(Decision, (True, p.limit - count, 0.0, reset, 0.0)), (window, count)
    retry = reset if cost <= p.limit else INF
    return new_decision(Decision, (False, p.limit - count, retry, reset, 0.0)), (window, count)


ALGORITHM = Algorithm(
    name="fixed_window",
    summary="count per aligned window; cheap, admits up to 2L across a window edge",
    params_type=Params,
    params_from_policy=from_policy,
    decide=decide,
    state_ttl=lambda p: p.window_s,
    max_cost=lambda p: p.limit,
)
