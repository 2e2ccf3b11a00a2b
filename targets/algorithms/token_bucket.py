"""Token bucket with lazy refill: ``capacity`` tokens, refilled at ``rate`` per second, computed
on arrival (no timer). A new key starts full. Admits bursts up to the capacity, then the rate:
at most C + rW in any window W.

Optional warm-up (cold start, as Guava's SmoothWarmingUp and Sentinel's warm-up controller),
off by default (``warmup_s=0``): a key whose bucket is full is *cold* (idle long enough to refill
completely). From the first request that finds it full, the refill rate ramps linearly from
``rate / cold_factor`` up to ``rate`` over ``warmup_s`` seconds, so a downstream that went cold
(caches, connection pools) is not hit with the full rate at once. The burst itself (a full
bucket) is unchanged. With warm-up the state carries the ramp's start time as a third element.

Without warm-up, time is whole µs (``base.US``) and the tokens are kept as the µs of refill they
are worth (``credit = tokens * T``, T = 1 / rate in µs): a refill is then the elapsed µs itself,
with no division, so when T is a whole number of µs (100 per 60 s: 600000 µs) every quantity is
an integer and a client paced exactly T apart is admitted every time. The warm-up ramp (a
quadratic with a square-root inverse) stays in float seconds: no client can pace exactly on it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from math import ceil
from typing import Annotated, ClassVar

from contract.params import Bounds

from .base import INF, Algorithm, Decision, derive, micros, new_decision
from .policy import Policy, PolicyError, require_positive

# without warm-up (credit µs, updated_at µs); with warm-up (tokens, updated_at s, ramp start s)
State = tuple[float, float] | tuple[float, float, float]


@dataclass(frozen=True)
class Params:
    capacity: float
    rate: float
    """Tokens per second."""
    warmup_s: Annotated[float, Bounds(0, 31 * 86_400)] = 0.0
    """Length of the ramp after a cold start; 0 disables warm-up."""
    cold_factor: Annotated[float, Bounds(1, 1_000)] = 3.0
    """The ramp starts at ``rate / cold_factor`` (Guava's default factor is 3)."""
    interval_us: ClassVar[float]
    """µs per token (1 / rate)."""
    full_us: ClassVar[float]
    """A full bucket's credit: capacity * interval_us."""

    def __post_init__(self) -> None:
        require_positive(self, "capacity", "rate")
        interval = micros(1 / self.rate)
        derive(self, interval_us=interval, full_us=self.capacity * interval)
        if not (math.isfinite(self.warmup_s) and self.warmup_s >= 0):
            raise PolicyError(f"warmup_s must be >= 0, got {self.warmup_s!r}")
        if not (math.isfinite(self.cold_factor) and self.cold_factor >= 1):
            raise PolicyError(f"cold_factor must be >= 1, got {self.cold_factor!r}")


def from_policy(policy: Policy) -> Params:
    return Params(policy.effective_burst, policy.rate)


def decide(state: State | None, now: float, cost: float, p: Params) -> tuple[Decision, State]:
    if p.warmup_s > 0:
        return _decide_warm(state, now, cost, p)
    t = (now * 1e6 + 0.5) // 1.0
    interval, full = p.interval_us, p.full_us
    credit = full if state is None else min(full, state[0] + max(0, t - state[1]))
    need = cost * interval
    if credit >= need:
        credit -= need
        return new_decision(Decision, (True, credit / interval, 0.0, (full - credit) / 1e6, 0.0)), (credit, t)
    retry = ceil(need - credit) / 1e6 if cost <= p.capacity else INF
    return new_decision(Decision, (False, credit / interval, retry, (full - credit) / 1e6, 0.0)), (credit, t)


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
