"""Sliding window counter: two aligned windows, the previous one weighted by how much of it
still overlaps the sliding window (estimate = prev * (1 - elapsed/W) + curr).

Two counters instead of a log. Exact when the previous window's traffic was even; an adversary
who spent L at the end of the previous window gets close to 2L in a sliding window.

Time is whole µs (``base.US``) and the estimate is compared multiplied by W (``prev * left +
(curr + cost) * W <= L * W``, ``left`` the µs of the previous window still inside the sliding
one): with whole counts every term is an integer, so an estimate of exactly L is not lost to a
residue (10 * (1 - 0.3) is 7.000000000000001 in floats).
"""

from __future__ import annotations

from math import ceil, floor

from .base import INF, Algorithm, Decision, new_decision
from .policy import WindowParams as Params
from .policy import window_params as from_policy

State = tuple[int, float, float]  # (current window id, previous count, current count)


def decide(state: State | None, now: float, cost: float, p: Params) -> tuple[Decision, State]:
    t, w, limit = (now * 1e6 + 0.5) // 1.0, p.window_us, p.limit
    window = floor(t / w)  # as fixed_window: the same arithmetic as Redis's Lua
    prev = curr = 0.0
    if state is not None:
        if state[0] == window:
            prev, curr = state[1], state[2]
        elif state[0] == window - 1:
            prev = state[2]
    start = window * w
    elapsed = t - start
    weighted = prev * (w - elapsed)  # the previous window's share of the estimate, times W
    if weighted + (curr + cost) * w <= limit * w:
        curr += cost
        estimate = weighted / w + curr
        decision = new_decision(Decision, (True, max(0.0, limit - estimate), 0.0, ((window + 2) * w - t) / 1e6, 0.0))
        return decision, (window, prev, curr)
    room = limit - curr - cost
    if cost > limit:
        retry = INF
    elif room >= 0 and prev > 0:
        # prev * (W - e) <= room * W  <=>  e >= W * (prev - room) / prev, still inside this window
        retry = (ceil(w * (prev - room) / prev) - elapsed) / 1e6
    else:
        # next window: prev' = curr, need curr * (W - e) <= (limit - cost) * W
        need = curr - (limit - cost)
        retry = (start + w + (ceil(w * need / curr) if need > 0 else 0) - t) / 1e6
    if curr > 0:
        reset = ((window + 2) * w - t) / 1e6
    elif prev > 0:
        reset = ((window + 1) * w - t) / 1e6
    else:
        reset = 0.0
    estimate = weighted / w + curr
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
