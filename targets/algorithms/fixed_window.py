"""Fixed window counter: one count per aligned window [kW, (k+1)W).

Cheapest possible state (window id, count), but a client can spend L just before a boundary and
L just after it: 2L inside any window of length W.

Time is whole µs (``base.US``), so a window edge is exact: 0.7 s is in window 7 of W = 0.1 s
(in float seconds, 0.7 / 0.1 = 6.999999999999999).
"""

from __future__ import annotations

from math import floor

from .base import INF, Algorithm, Decision, new_decision
from .policy import WindowParams as Params
from .policy import window_params as from_policy

State = tuple[int, float]  # (window id, admitted cost in that window)


def decide(state: State | None, now: float, cost: float, p: Params) -> tuple[Decision, State]:
    t, w = (now * 1e6 + 0.5) // 1.0, p.window_us
    window = floor(t / w)  # floor(t / w), not t // w: what Redis's Lua computes (exact for whole µs)
    count = state[1] if state is not None and state[0] == window else 0.0
    reset = ((window + 1) * w - t) / 1e6
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
