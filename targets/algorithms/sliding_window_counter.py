"""Sliding window counter: two aligned windows, the previous one weighted by how much of it
still overlaps the sliding window (estimate = prev * (1 - elapsed/W) + curr).

Two counters instead of a log. Exact when the previous window's traffic was even; an adversary
who spent L at the end of the previous window gets close to 2L in a sliding window.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import floor

from .base import INF, Algorithm, Decision, new_decision
from .policy import Policy, require_positive

State = tuple[int, float, float]  # (current window id, previous count, current count)


@dataclass(frozen=True, slots=True)
class Params:
    limit: float
    window_s: float

    def __post_init__(self) -> None:
        require_positive(self, "limit", "window_s")


def from_policy(policy: Policy) -> Params:
    return Params(policy.limit, policy.window_s)


def decide(state: State | None, now: float, cost: float, p: Params) -> tuple[Decision, State]:
    w, limit = p.window_s, p.limit
    window = floor(now / w)  # as fixed_window: the same float arithmetic as Redis's Lua
    prev = curr = 0.0
    if state is not None:
        if state[0] == window:
            prev, curr = state[1], state[2]
        elif state[0] == window - 1:
            prev = state[2]
    start = window * w
    estimate = prev * (1.0 - (now - start) / w) + curr
    if estimate + cost <= limit:
        curr += cost
        estimate += cost
        decision = new_decision(Decision, (True, max(0.0, limit - estimate), 0.0, (window + 2) * w - now, 0.0))
        return decision, (window, prev, curr)
    room = limit - curr - cost
    if cost > limit:
        retry = INF
    elif room >= 0 and prev > 0:
        # prev * (1 - f) <= room  <=>  f >= 1 - room / prev, still inside this window
        retry = start + w * (1.0 - room / prev) - now
    else:
        # next window: prev' = curr, need curr * (1 - f) + cost <= limit
        need = 1.0 - (limit - cost) / curr if curr > 0 else 0.0
        retry = start + w + w * max(0.0, need) - now
    if curr > 0:
        reset = (window + 2) * w - now
    elif prev > 0:
        reset = (window + 1) * w - now
    else:
        reset = 0.0
    return new_decision(Decision, (False, max(0.0, limit - estimate), retry, reset, 0.0)), (window, prev, curr)


ALGORITHM = Algorithm(
    name="sliding_window_counter",
    summary="previous window weighted + current (two counters); ~L on even traffic, up to ~2L adversarial",
    params_type=Params,
    params_from_policy=from_policy,
    decide=decide,
    state_ttl=lambda p: 2 * p.window_s,
    max_cost=lambda p: p.limit,
)
