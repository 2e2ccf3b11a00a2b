"""No limiting: the baseline that measures what the rest of the stack costs."""

from __future__ import annotations

from dataclasses import dataclass

from .base import INF, Algorithm, Decision
from .policy import Policy

_ALLOW = Decision(True, INF, 0.0, 0.0)


@dataclass(frozen=True, slots=True)
class Params:
    pass


def from_policy(policy: Policy) -> Params:
    return Params()


def decide(state: None, now: float, cost: float, p: Params) -> tuple[Decision, None]:
    return _ALLOW, None


ALGORITHM = Algorithm(
    name="none",
    summary="admits everything; the overhead baseline",
    params_type=Params,
    params_from_policy=from_policy,
    decide=decide,
    state_ttl=lambda p: 0.0,
    max_cost=lambda p: INF,
    limits=False,
)
