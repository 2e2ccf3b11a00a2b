"""Adaptive concurrency limit: at most ``limit`` cost units in flight, where the limit itself
moves with the latency the downstream shows (as Netflix concurrency-limits).

Two rules, chosen with the ``rule`` parameter:

- ``gradient2`` (Netflix ``Gradient2Limit``): a long-term RTT (average of the first samples,
  then an exponential average over ``long_window`` samples) is compared with each new sample:
  ``gradient = clamp(tolerance * long_rtt / rtt, 0.5, 1)``, ``new = limit * gradient + queue_size``,
  smoothed: ``limit = limit * (1 - smoothing) + new * smoothing``. When the long RTT is more than
  twice the sample (latency recovered after a long bad phase) it decays by 5% so the limit can
  grow back. No change while the caller is app-limited (in flight < limit / 2).
- ``aimd``: a sample slower than ``timeout_s`` multiplies the limit by ``backoff_ratio``;
  otherwise, when at least half of the limit is in use, it grows by ``increase``.

The transitions are pure: ``decide``/``release`` as every concurrency algorithm, and ``observe``
folds one latency sample into the state. The limit is a float (smooth updates); admission uses
its integer part, which is also what the target shows in its ``X-Concurrency-Limit`` header.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Literal

from contract.params import Bounds

from .base import INF, Algorithm, Decision, new_decision
from .policy import Policy, PolicyError, require_positive

# (limit, cost units in flight, long-term RTT in seconds, RTT samples seen)
State = tuple[float, float, float, int]

Rule = Literal["gradient2", "aimd"]
WARMUP_SAMPLES = 10
"""Gradient2's long RTT is a plain average over this many first samples, then an EMA."""
MIN_RTT_S = 1e-6


@dataclass(frozen=True, slots=True)
class Params:
    max_limit: float
    initial_limit: float
    min_limit: float = 1.0
    rule: Rule = "gradient2"
    # gradient2
    smoothing: float = 0.2
    tolerance: float = 1.5
    long_window: Annotated[int, Bounds(1, 1_000_000)] = 600
    queue_size: float = 4.0
    # aimd
    backoff_ratio: float = 0.9
    timeout_s: float = 0.25
    increase: float = 1.0
    hold_s: float = 0.1
    """Retry-After hint, and how long the simulator holds a slot (it has no real latency)."""

    def __post_init__(self) -> None:
        require_positive(self, "max_limit", "initial_limit", "min_limit", "smoothing", "tolerance",
                         "backoff_ratio", "timeout_s", "hold_s")
        if not self.min_limit <= self.initial_limit <= self.max_limit:
            raise PolicyError(f"need min_limit <= initial_limit <= max_limit, got "
                              f"{self.min_limit} / {self.initial_limit} / {self.max_limit}")
        if self.smoothing > 1 or self.backoff_ratio >= 1:
            raise PolicyError("smoothing must be in (0, 1] and backoff_ratio in (0, 1)")
        if self.long_window < 1 or not (math.isfinite(self.queue_size) and self.queue_size >= 0):
            raise PolicyError("long_window must be >= 1 and queue_size >= 0")
        if not (math.isfinite(self.increase) and self.increase >= 0):
            raise PolicyError(f"increase must be >= 0, got {self.increase!r}")


def from_policy(policy: Policy) -> Params:
    """The policy's burst is the ceiling and the starting point: the limit can only be lowered
    by latency, then recover, so it is compared fairly with ``concurrency`` at the same burst."""
    burst = policy.effective_burst
    return Params(max_limit=burst, initial_limit=burst, min_limit=min(1.0, burst))


def _fresh(p: Params) -> State:
    return (p.initial_limit, 0.0, 0.0, 0)


def decide(state: State | None, now: float, cost: float, p: Params) -> tuple[Decision, State]:
    limit, in_flight, long_rtt, samples = state or _fresh(p)
    room = math.floor(limit) - in_flight
    if cost <= room:
        new = (limit, in_flight + cost, long_rtt, samples)
        return new_decision(Decision, (True, room - cost, 0.0, p.hold_s, 0.0)), new
    retry = p.hold_s if cost <= p.max_limit else INF
    return new_decision(Decision, (False, max(0.0, room), retry, p.hold_s, 0.0)), state or _fresh(p)


def release(state: State | None, now: float, cost: float, p: Params) -> State:
    limit, in_flight, long_rtt, samples = state or _fresh(p)
    return (limit, max(0.0, in_flight - cost), long_rtt, samples)


def observe(state: State | None, now: float, rtt_s: float, p: Params) -> State:
    """Fold one completed request's latency into the limit (call before ``release``, so that
    ``in_flight`` still counts the request, as Netflix's limiter sees it)."""
    limit, in_flight, long_rtt, samples = state or _fresh(p)
    rtt = max(rtt_s, MIN_RTT_S)
    if p.rule == "aimd":
        if rtt > p.timeout_s:
            limit *= p.backoff_ratio
        elif in_flight * 2 >= limit:
            limit += p.increase
        return (min(p.max_limit, max(p.min_limit, limit)), in_flight, long_rtt, samples + 1)
    if samples < WARMUP_SAMPLES:
        long_rtt = (long_rtt * samples + rtt) / (samples + 1)
    else:
        factor = 2.0 / (p.long_window + 1)
        long_rtt = long_rtt * (1.0 - factor) + rtt * factor
    samples += 1
    if long_rtt / rtt > 2.0:
        long_rtt *= 0.95
    if in_flight < limit / 2:
        return (limit, in_flight, long_rtt, samples)
    gradient = max(0.5, min(1.0, p.tolerance * long_rtt / rtt))
    target = limit * gradient + p.queue_size
    limit = limit * (1.0 - p.smoothing) + target * p.smoothing
    return (min(p.max_limit, max(p.min_limit, limit)), in_flight, long_rtt, samples)


def current_limit(state: State | None, p: Params) -> int:
    """The admission limit a client sees (integer part of the smoothed limit)."""
    return math.floor((state or _fresh(p))[0])


ALGORITHM = Algorithm(
    name="adaptive",
    summary="concurrency limit moved by downstream latency (rule=gradient2 as Netflix Gradient2, or aimd)",
    params_type=Params,
    params_from_policy=from_policy,
    decide=decide,
    state_ttl=lambda p: math.inf,  # the learned limit and in-flight counts must survive idle time
    max_cost=lambda p: p.max_limit,
    release=release,
    observe=observe,
)
