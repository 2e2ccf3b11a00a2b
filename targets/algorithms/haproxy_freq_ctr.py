"""HAProxy's period frequency counter (``http_req_rate(W)`` of a stick table) with ``http-request
deny if { sc_http_req_rate(0) gt L }``: the model of the ``haproxy`` peer, not one of the suite's
targets' algorithms (``PEER_MODELS``: no Redis script, never in ``all``).

A sliding window counter, but HAProxy's (src/freq_ctr.c, include/haproxy/freq_ctr.h, 2.6):
- per key three integers: ``tick`` (start of the current period, ms), ``curr``, ``prev``;
- ``track-sc0`` counts *every* request before the deny rule reads it, so denied requests count
  too (a client that keeps knocking stays refused; the suite's algorithms consume nothing on a
  refusal);
- periods are not aligned to the clock: a key idle for two periods (or new) starts its period
  at its first request (``tick = now``); otherwise the period rotates by exactly W
  (``tick += W``, ``prev = curr``); ``tick`` is kept even (its low bit is HAProxy's lock);
- the rate read is ``floor((prev * (tick + W - now) + curr * W) / W)`` in whole ms, and the
  request is refused when it exceeds L: admitted while the estimate is below L + 1.
Time is HAProxy's ``now_ms``: whole ms, truncated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from .base import Algorithm, Decision, derive, new_decision, whole_ms
from .policy import Policy, PolicyError, require_positive

State = tuple[int, int, int]  # (tick ms, current period's count, previous period's count)


@dataclass(frozen=True)
class Params:
    limit: float
    """``gt L``: refused when the rate read exceeds it (a whole number of requests)."""
    window_s: float
    """``http_req_rate(W)``: the period, a whole number of ms."""
    period_ms: ClassVar[int]

    def __post_init__(self) -> None:
        require_positive(self, "limit", "window_s")
        period = round(self.window_s * 1000)
        if abs(self.window_s * 1000 - period) > 1e-9 or self.limit != int(self.limit):
            raise PolicyError(f"haproxy_freq_ctr: limit {self.limit:g} per {self.window_s:g} s; HAProxy counts whole "
                              "requests over a whole number of ms")
        derive(self, period_ms=period)


def from_policy(policy: Policy) -> Params:
    return Params(policy.limit, policy.window_s)


def decide(state: State | None, now: float, cost: float, p: Params) -> tuple[Decision, State]:
    ms, period, limit = whole_ms(now), p.period_ms, p.limit
    if state is None:  # HAProxy's new entry (tick 0) rotates at once: a period starting now
        tick, curr, prev = ms & ~1, int(cost), 0
    elif ms - state[0] < period:  # update_freq_ctr_period: counted, admitted or not
        tick, curr, prev = state[0], state[1] + int(cost), state[2]
    else:
        tick, curr, prev = state[0] + period, int(cost), state[1]
        if ms - tick >= period:  # two periods missed: start over at now
            prev, tick = 0, ms
        tick &= ~1
    remain = tick + period - ms  # never negative right after an update
    rate = (prev * remain + curr * period) // period  # read_freq_ctr_period
    reset = (tick + 2 * period - ms) / 1000
    if rate <= limit:
        return new_decision(Decision, (True, float(limit - rate), 0.0, reset, 0.0)), (tick, curr, prev)
    return new_decision(Decision, (False, 0.0, _retry_ms(tick, curr, prev, ms, p) / 1000, reset, 0.0)), (tick, curr, prev)


def _retry_ms(tick: int, curr: int, prev: int, ms: int, p: Params) -> int:
    """Ms until one more request (which counts itself) would read a rate <= L."""
    period, limit, remain = p.period_ms, p.limit, tick + p.period_ms - ms
    if curr + 1 <= limit and prev:  # later in this period, once enough of prev has slid out
        wait = math.floor(remain - (limit - curr) * period / prev) + 1
        if wait < remain:
            return max(0, wait)
    # in the next period prev is today's curr: curr * remain' + W < (L + 1) * W
    wait = math.floor(period - limit * period / curr) + 1 if curr >= limit else 0
    return remain + min(max(0, wait), period)


ALGORITHM = Algorithm(
    name="haproxy_freq_ctr",
    summary="HAProxy's http_req_rate period counter with deny gt L: denied requests count, periods start at a key's first request",
    params_type=Params,
    params_from_policy=from_policy,
    decide=decide,
    state_ttl=lambda p: 2 * p.window_s,
    max_cost=lambda p: p.limit,
)
