"""Leaky bucket: a level that drains at ``rate`` per second and holds at most ``capacity``.

Two modes:
- ``meter`` (default): a request that would overflow the bucket is rejected (a policer; the
  mirror image of the token bucket, so C + rW in any window W);
- ``queue``: NGINX ``limit_req`` without ``nodelay`` / Sentinel's uniform queueing: a request
  that would overflow is admitted with a delay (it waits until the level has drained enough),
  up to ``max_delay_s``; beyond that it is rejected. Admitted traffic leaves at the rate.

Time is whole µs (``base.US``) and the level is kept as the µs it takes to drain
(``debt = level * T``, T = 1 / rate in µs): draining is then the elapsed µs itself, so when T is a
whole number of µs every quantity is an integer and a client paced exactly T apart is admitted.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil
from typing import Annotated, ClassVar, Literal

from contract.params import Bounds

from .base import INF, Algorithm, Decision, derive, micros, new_decision
from .policy import Policy, PolicyError, require_positive

State = tuple[float, float]  # (µs to drain the level, updated_at µs); in queue mode the level includes queued work


@dataclass(frozen=True)
class Params:
    capacity: float
    rate: float
    """Cost units drained per second."""
    mode: Literal["meter", "queue"] = "meter"
    max_delay_s: Annotated[float, Bounds(0, 3_600)] = 0.0
    interval_us: ClassVar[float]
    """µs to drain one cost unit (1 / rate)."""
    full_us: ClassVar[float]
    """A full bucket's debt: capacity * interval_us."""
    max_delay_us: ClassVar[float]

    def __post_init__(self) -> None:
        require_positive(self, "capacity", "rate")
        if self.mode not in ("meter", "queue"):
            raise PolicyError(f"mode must be 'meter' or 'queue', got {self.mode!r}")
        if not self.max_delay_s >= 0:
            raise PolicyError(f"max_delay_s must be >= 0, got {self.max_delay_s!r}")
        interval = micros(1 / self.rate)
        derive(self, interval_us=interval, full_us=self.capacity * interval, max_delay_us=micros(self.max_delay_s))


def from_policy(policy: Policy) -> Params:
    return Params(policy.effective_burst, policy.rate)


def decide(state: State | None, now: float, cost: float, p: Params) -> tuple[Decision, State]:
    t = (now * 1e6 + 0.5) // 1.0
    interval, full = p.interval_us, p.full_us
    debt = 0.0 if state is None else max(0.0, state[0] - max(0, t - state[1]))
    need = cost * interval
    overflow = debt + need - full  # µs until the request would fit
    if overflow <= 0:
        debt += need
        return new_decision(Decision, (True, (full - debt) / interval, 0.0, debt / 1e6, 0.0)), (debt, t)
    queue = p.mode == "queue"
    if queue and overflow <= p.max_delay_us:
        debt += need
        return new_decision(Decision, (True, 0.0, 0.0, debt / 1e6, overflow / 1e6)), (debt, t)
    retry = INF if cost > p.capacity else ceil(overflow - p.max_delay_us) / 1e6 if queue else ceil(overflow) / 1e6
    return new_decision(Decision, (False, max(0.0, (full - debt) / interval), retry, debt / 1e6, 0.0)), (debt, t)


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
