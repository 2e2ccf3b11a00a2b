"""Leaky bucket: a level that drains at ``rate`` per second and holds at most ``capacity``.

Two modes:
- ``meter`` (default): a request that would overflow the bucket is rejected (a policer; the
  mirror image of the token bucket, so C + rW in any window W);
- ``queue``: NGINX ``limit_req`` without ``nodelay`` / Sentinel's uniform queueing: a request
  that would overflow is admitted with a delay (it waits until the level has drained enough),
  up to ``max_delay_s``; beyond that it is rejected. Admitted traffic leaves at the rate.
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import INF, Algorithm, Decision, new_decision
from .policy import Policy, PolicyError, require_positive

State = tuple[float, float]  # (level, updated_at); in queue mode the level includes queued work


@dataclass(frozen=True, slots=True)
class Params:
    capacity: float
    rate: float
    """Cost units drained per second."""
    mode: str = "meter"
    max_delay_s: float = 0.0

    def __post_init__(self) -> None:
        require_positive(self, "capacity", "rate")
        if self.mode not in ("meter", "queue"):
            raise PolicyError(f"mode must be 'meter' or 'queue', got {self.mode!r}")
        if not self.max_delay_s >= 0:
            raise PolicyError(f"max_delay_s must be >= 0, got {self.max_delay_s!r}")


def from_policy(policy: Policy) -> Params:
    return Params(policy.effective_burst, policy.rate)


def decide(state: State | None, now: float, cost: float, p: Params) -> tuple[Decision, State]:
    level = 0.0 if state is None else max(0.0, state[0] - max(0.0, now - state[1]) * p.rate)
    overflow = level + cost - p.capacity
    if overflow <= 0:
        level += cost
        return new_decision(Decision, (True, p.capacity - level, 0.0, level / p.rate, 0.0)), (level, now)
    delay = overflow / p.rate
    if p.mode == "queue" and delay <= p.max_delay_s:
        level += cost
        return new_decision(Decision, (True, 0.0, 0.0, level / p.rate, delay)), (level, now)
    retry = INF if cost > p.capacity else delay - p.max_delay_s if p.mode == "queue" else delay
    return new_decision(Decision, (False, max(0.0, p.capacity - level), retry, level / p.rate, 0.0)), (level, now)


def _max_cost(p: Params) -> float:
    return p.capacity + (p.rate * p.max_delay_s if p.mode == "queue" else 0.0)


ALGORITHM = Algorithm(
    name="leaky_bucket",
    summary="level draining at r/s; meter rejects overflow, queue delays it up to max_delay_s",
    params_type=Params,
    params_from_policy=from_policy,
    decide=decide,
    state_ttl=lambda p: _max_cost(p) / p.rate,
    max_cost=_max_cost,
)
