"""Token bucket with lazy refill: ``capacity`` tokens, refilled at ``rate`` per second, computed
on arrival (no timer). A new key starts full. Admits bursts up to the capacity, then the rate:
at most C + rW in any window W.

Optional warm-up (cold start, as Guava's SmoothWarmingUp and Sentinel's warm-up controller),
off by default (``warmup_s=0``): a key whose bucket is full is *cold* (idle long enough to refill
completely). From the first request that finds it full, the refill rate ramps linearly from
``rate / cold_factor`` up to ``rate`` over ``warmup_s`` seconds, so a downstream that went cold
(caches, connection pools) is not hit with the full rate at once. The burst itself (a full
bucket) is unchanged. With warm-up the state carries the ramp's start time as a third element.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .base import INF, Algorithm, Decision, new_decision
from .policy import Policy, PolicyError, require_positive

State = tuple[float, float] | tuple[float, float, float]  # (tokens, updated_at[, warm-up start])


@dataclass(frozen=True, slots=True)
class Params:
    capacity: float
    rate: float
    """Tokens per second."""
    warmup_s: float = 0.0
    """Length of the ramp after a cold start; 0 disables warm-up."""
    cold_factor: float = 3.0
    """The ramp starts at ``rate / cold_factor`` (Guava's default factor is 3)."""

    def __post_init__(self) -> None:
        require_positive(self, "capacity", "rate")
        if not (math.isfinite(self.warmup_s) and self.warmup_s >= 0):
            raise PolicyError(f"warmup_s must be >= 0, got {self.warmup_s!r}")
        if not (math.isfinite(self.cold_factor) and self.cold_factor >= 1):
            raise PolicyError(f"cold_factor must be >= 1, got {self.cold_factor!r}")


def from_policy(policy: Policy) -> Params:
    return Params(policy.effective_burst, policy.rate)


def decide(state: State | None, now: float, cost: float, p: Params) -> tuple[Decision, State]:
    if p.warmup_s > 0:
        return _decide_warm(state, now, cost, p)
    tokens = p.capacity if state is None else min(p.capacity, state[0] + max(0.0, now - state[1]) * p.rate)
    if tokens >= cost:
        tokens -= cost
        return new_decision(Decision, (True, tokens, 0.0, (p.capacity - tokens) / p.rate, 0.0)), (tokens, now)
    retry = (cost - tokens) / p.rate if cost <= p.capacity else INF
    return new_decision(Decision, (False, tokens, retry, (p.capacity - tokens) / p.rate, 0.0)), (tokens, now)


def _filled(u: float, p: Params) -> float:
    """Tokens refilled in the first ``u`` seconds of a ramp: the integral of
    rate * min(1, f + (1 - f) * t / warmup_s) with f = 1 / cold_factor."""
    f, w = 1.0 / p.cold_factor, p.warmup_s
    if u <= w:
        return p.rate * (f * u + (1.0 - f) * u * u / (2.0 * w))
    return p.rate * (w * (1.0 + f) / 2.0 + (u - w))


def _time_to_fill(tokens: float, p: Params) -> float:
    """The inverse of ``_filled``: seconds into the ramp until ``tokens`` have been refilled."""
    f, w = 1.0 / p.cold_factor, p.warmup_s
    units = tokens / p.rate
    ramp = w * (1.0 + f) / 2.0
    if units > ramp:
        return w + (units - ramp)
    if f == 1.0:
        return units
    a = (1.0 - f) / (2.0 * w)  # a u^2 + f u - units = 0
    return (-f + math.sqrt(f * f + 4.0 * a * units)) / (2.0 * a)


def _decide_warm(state: State | None, now: float, cost: float, p: Params) -> tuple[Decision, State]:
    if state is None:
        tokens, start = p.capacity, now
    else:
        tokens, updated, start = state  # type: ignore[misc]
        elapsed = max(now, updated) - start
        tokens += _filled(elapsed, p) - _filled(max(0.0, updated - start), p)
        if tokens >= p.capacity:
            tokens, start = p.capacity, now  # full: the key went cold, a new ramp starts now
    into = now - start
    done = _filled(into, p)
    reset = _time_to_fill(done + p.capacity - tokens, p) - into if tokens < p.capacity else 0.0
    if tokens >= cost:
        tokens -= cost
        reset = _time_to_fill(done + p.capacity - tokens, p) - into
        return new_decision(Decision, (True, tokens, 0.0, reset, 0.0)), (tokens, now, start)
    retry = _time_to_fill(done + cost - tokens, p) - into if cost <= p.capacity else INF
    return new_decision(Decision, (False, tokens, retry, reset, 0.0)), (tokens, now, start)


def _state_ttl(p: Params) -> float:
    """Time after which any state has refilled completely (so it is equivalent to a fresh
    one). A ramp refills at most ``warmup_s * (1 - 1/cold_factor) / 2`` seconds' worth of
    tokens less than the full rate would."""
    return p.capacity / p.rate + p.warmup_s * (1.0 - 1.0 / p.cold_factor) / 2.0


ALGORITHM = Algorithm(
    name="token_bucket",
    summary="capacity C refilled at r/s, lazily; bursts up to C then the rate (C + rW per window); optional warm-up",
    params_type=Params,
    params_from_policy=from_policy,
    decide=decide,
    state_ttl=_state_ttl,
    max_cost=lambda p: p.capacity,
)
