"""The ``limits`` library's fixed window (``FixedWindowRateLimiter.hit``, limits 5.x): the model of
the ``slowapi-fixed-window`` peers, not one of the suite's targets' algorithms (``PEER_MODELS``:
no Redis script, never in ``all``).

What limits does, on memory storage and on Redis alike:
- ``hit`` is ``incr(key, W, cost) <= L``: the counter is incremented *before* the comparison, so a
  refused hit counts too (a client that keeps knocking stays refused until the window ends; the
  suite's ``fixed_window`` consumes nothing on a refusal);
- the window is anchored to a key's first hit, not to the clock: the increment that creates the
  counter (value == cost) sets its expiry to W seconds from that hit (memory: ``time.time() + W``,
  a float; Redis: ``INCRBY`` then ``EXPIRE W`` when the value equals the amount, at Redis's ms
  clock); the counter is gone, and the next hit opens a new window, once ``now >= first + W``.
Time is whole µs, like the suite's algorithms (Redis's ms expiry differs only within 1 ms of an
edge).
"""

from __future__ import annotations

from .base import INF, Algorithm, Decision, new_decision
from .policy import WindowParams as Params
from .policy import window_params as from_policy

State = tuple[float, float]  # (µs of the hit that opened the window, cost counted in it, refused too)


def decide(state: State | None, now: float, cost: float, p: Params) -> tuple[Decision, State]:
    t, w = (now * 1e6 + 0.5) // 1.0, p.window_us
    # expired (memory: expiry <= time.time()): a new window from this hit; else incr counts the
    # hit whether it is admitted or not
    fresh = state is None or t >= state[0] + w
    start, count = (t, cost) if fresh else (state[0], state[1] + cost)
    state = (start, count)
    reset = (start + w - t) / 1e6
    if count <= p.limit:
        return new_decision(Decision, (True, p.limit - count, 0.0, reset, 0.0)), state
    retry = reset if cost <= p.limit else INF  # the next window starts from the next hit's cost
    return new_decision(Decision, (False, max(0.0, p.limit - count), retry, reset, 0.0)), state


ALGORITHM = Algorithm(
    name="limits_fixed_window",
    summary="limits' fixed window: anchored to a key's first hit, refused hits count",
    params_type=Params,
    params_from_policy=from_policy,
    decide=decide,
    state_ttl=lambda p: p.window_s,
    max_cost=lambda p: p.limit,
)
