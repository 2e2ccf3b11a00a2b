"""The ``limits`` library's sliding window counter on Redis (``acquire_sliding_window.lua``, limits
5.x): the model of the ``slowapi-sliding-window-counter-redis`` peer, not one of the suite's
targets' algorithms (``PEER_MODELS``: no Redis script of ours, never in ``all``).

Unlike limits' memory storage (two counters on clock-aligned windows: the suite's
``sliding_window_counter`` models it), the Redis script keeps a pair of keys anchored to a key's
first hit, on Redis's clock (whole ms):
- the first admitted hit creates ``current`` with its cost and a TTL of 2W;
- a hit that finds ``current``'s TTL in (0, W) first shifts it: ``current`` becomes ``previous``
  (keeping its expiry), and a new ``current`` of 0 expires W after the old one;
- the estimate is ``floor(previous * previous_ttl / W) + current`` (TTLs in ms, absent keys 0);
  refused when estimate + cost > L: a refusal counts nothing (but the shift stays done);
- a cost above L is refused before anything (no shift).
A key expires when Redis's ms clock passes its expiry (``now > when``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from .base import INF, Algorithm, Decision, derive, new_decision, whole_ms
from .policy import Policy, PolicyError, require_positive

State = tuple[int, int, int, int]  # (current count, its expiry ms, previous count, its expiry ms)
_ABSENT = (0, -1, 0, -1)


@dataclass(frozen=True)
class Params:
    limit: float
    window_s: float
    window_ms: ClassVar[int]

    def __post_init__(self) -> None:
        require_positive(self, "limit", "window_s")
        window = round(self.window_s * 1000)
        if abs(self.window_s * 1000 - window) > 1e-9:
            raise PolicyError(f"limits_sliding_window_counter_redis: window {self.window_s:g} s; the script "
                              "counts whole ms")
        derive(self, window_ms=window)


def from_policy(policy: Policy) -> Params:
    return Params(policy.limit, policy.window_s)


def decide(state: State | None, now: float, cost: float, p: Params) -> tuple[Decision, State]:
    ms, w, limit = whole_ms(now), p.window_ms, p.limit
    cc, ce, pc, pe = state or _ABSENT
    if cost > limit:
        return new_decision(Decision, (False, 0.0, INF, max(0, max(ce, pe) - ms) / 1000, 0.0)), (cc, ce, pc, pe)
    if 0 < ce - ms < w:  # current's TTL below W: it becomes previous, a fresh current of 0
        cc, ce, pc, pe = 0, ce + w, cc, ce
    current = cc if ce >= ms else 0
    previous = pc * (pe - ms) // w if pe >= ms else 0
    estimate = previous + current
    if estimate + cost > limit:
        retry = _retry_ms(cc, ce, pc, pe, ms, cost, p)
        return new_decision(Decision, (False, max(0.0, limit - estimate), retry / 1000,
                                       max(0, max(ce, pe) - ms) / 1000, 0.0)), (cc, ce, pc, pe)
    if ce >= ms:
        cc += int(cost)
    else:  # no current (nor a previous: it expired first): a new pair from this hit
        cc, ce = int(cost), ms + 2 * w
    return new_decision(Decision, (True, limit - estimate - cost, 0.0, (max(ce, pe) - ms) / 1000, 0.0)), (cc, ce, pc, pe)


def _retry_ms(cc: int, ce: int, pc: int, pe: int, ms: int, cost: float, p: Params) -> int:
    """Ms until a hit of the same cost would be admitted, if none comes before it (refused now, so
    ``current`` exists, with a TTL of W or more). Until the next shift (at ``ce - W + 1``) only
    ``previous`` slides out; after it the current count does."""
    w, room = p.window_ms, p.limit - cost
    if room - cc >= 0 and pc:  # floor(pc * (pe - t) / W) <= room - cc  <=>  pc * (pe - t) < (room - cc + 1) * W
        at = math.floor(pe - (room - cc + 1) * w / pc) + 1
        if at <= ce - w:
            return max(0, at - ms)
    # shifted at t: floor(cc * (ce - t) / W) <= room  <=>  cc * (ce - t) < (room + 1) * W
    at = ce - w + 1 if not cc else max(ce - w + 1, math.floor(ce - (room + 1) * w / cc) + 1)
    return max(0, at - ms)


ALGORITHM = Algorithm(
    name="limits_sliding_window_counter_redis",
    summary="limits' sliding window counter on Redis: the counter pair anchored to a key's first hit",
    params_type=Params,
    params_from_policy=from_policy,
    decide=decide,
    state_ttl=lambda p: 2 * p.window_s,
    max_cost=lambda p: p.limit,
)
