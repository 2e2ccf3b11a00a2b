"""Token bucket with lazy refill: ``capacity`` tokens, refilled at ``rate`` per second, computed
on arrival (no timer). A new key starts full. Admits bursts up to the capacity, then the rate:
at most C + rW in any window W.
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import INF, Algorithm, Decision, new_decision
from .policy import Policy, require_positive

State = tuple[float, float]  # (tokens, updated_at)


@dataclass(frozen=True, slots=True)
class Params:
    capacity: float
    rate: float
    """Tokens per second."""

    def __post_init__(self) -> None:
        require_positive(self, "capacity", "rate")


def from_policy(policy: Policy) -> Params:
    return Params(policy.effective_burst, policy.rate)


def decide(state: State | None, now: float, cost: float, p: Params) -> tuple[Decision, State]:
    tokens = p.capacity if state is None else min(p.capacity, state[0] + max(0.0, now - state[1]) * p.rate)
    if tokens >= cost:
        tokens -= cost
        return new_decision(Decision, (True, tokens, 0.0, (p.capacity - tokens) / p.rate, 0.0)), (tokens, now)
    retry = (cost - tokens) / p.rate if cost <= p.capacity else INF
    return new_decision(Decision, (False, tokens, retry, (p.capacity - tokens) / p.rate, 0.0)), (tokens, now)


ALGORITHM = Algorithm(
    name="token_bucket",
    summary="capacity C refilled at r/s, lazily; bursts up to C then the rate (C + rW per window)",
    params_type=Params,
    params_from_policy=from_policy,
    decide=decide,
    state_ttl=lambda p: p.capacity / p.rate,
    max_cost=lambda p: p.capacity,
)
