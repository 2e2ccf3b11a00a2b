"""Sliding log: the exact reference. Admits when the admitted cost in (t - W, t] plus the
request's cost is at most L.

State is one entry per admitted request, so memory grows with L; every other algorithm is judged
against its decisions (false admits / false rejects).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from .base import INF, Algorithm, Decision, new_decision
from .policy import Policy, require_positive

# (expiry times, running cost sums, base): one entry per admitted request, oldest first.
# - expiry (t + W) rather than t keeps "waits exactly retry_after" exact: the comparison is
#   against the very float that retry_after came from;
# - running sums (cums[i] = base + cost of entries 0..i) give the window total without a sum;
# - arrays of doubles, not tuples: an admit copies the live entries once (a memcpy), where a
#   tuple copy would touch the reference count of every float in the log. Arrays are never
#   mutated after they are returned, so the transition stays pure.
State = tuple[array, array, float]
_EMPTY = array("d")


@dataclass(frozen=True, slots=True)
class Params:
    limit: float
    window_s: float

    def __post_init__(self) -> None:
        require_positive(self, "limit", "window_s")


def from_policy(policy: Policy) -> Params:
    return Params(policy.limit, policy.window_s)


def decide(state: State | None, now: float, cost: float, p: Params) -> tuple[Decision, State]:
    if state is None:
        expiries, cums, base = _EMPTY, _EMPTY, 0.0
    else:
        expiries, cums, base = state
    n = len(expiries)
    head = bisect_right(expiries, now) if n and expiries[0] <= now else 0  # expired entries
    if head:
        base = cums[head - 1]
    total = cums[-1] - base if head < n else 0.0
    if total + cost <= p.limit:
        live_expiries, live_cums = expiries[head:], cums[head:]
        live_expiries.append(now + p.window_s)
        live_cums.append(base + total + cost)
        decision = new_decision(Decision, (True, p.limit - total - cost, 0.0, p.window_s, 0.0))
        return decision, (live_expiries, live_cums, base)
    retry = INF
    if cost <= p.limit:
        # the oldest entries that must expire before total + cost fits under the limit
        retry = expiries[bisect_left(cums, base + total + cost - p.limit, head)] - now
    reset = expiries[-1] - now if head < n else 0.0
    return new_decision(Decision, (False, max(0.0, p.limit - total), retry, reset, 0.0)), state


ALGORITHM = Algorithm(
    name="sliding_log",
    summary="timestamp per admitted request; exact L in any window W (the reference), memory ~L per key",
    params_type=Params,
    params_from_policy=from_policy,
    decide=decide,
    state_ttl=lambda p: p.window_s,
    max_cost=lambda p: p.limit,
)
