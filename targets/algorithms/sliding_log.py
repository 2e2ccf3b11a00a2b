"""Sliding log: the exact reference. Admits when the admitted cost in (t - W, t] plus the
request's cost is at most L.

State is one entry per admitted request, so memory grows with L; every other algorithm is judged
against its decisions (false admits / false rejects).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right

from .base import INF, Algorithm, Decision, new_decision
from .policy import WindowParams as Params
from .policy import window_params as from_policy

# (expiries, cums, head, end, base): the live entries, oldest first, are [head, end) of two
# append-only buffers of doubles; base is the running cost sum before index 0.
# - expiry (t + W, whole µs: base.US) rather than t keeps "waits exactly retry_after" exact: the
#   comparison is against the very number that retry_after came from, and an entry of 0.1 s
#   leaves a 0.2 s window at exactly 0.3 s (in float seconds 0.1 + 0.2 > 0.3);
# - running sums (cums[i] = base + cost of entries 0..i) give the window total without a sum;
# - a state is a view: an admit appends in place when the buffer ends where the view ends, so it
#   costs O(1), not a copy of the whole log (at thousands of entries per key that copy was the
#   target's biggest per-request cost). Entries inside a view are never changed, so every state
#   ever returned stays valid and the transition stays pure: deciding again from an older state
#   (a peek that was not committed, a test replaying) finds the buffer longer than its view and
#   copies the live part instead. The expired prefix is dropped by the same copy once it is at
#   least as long as the live part, so memory stays within 2x the live log.
State = tuple[array, array, int, int, float]
COMPACT_MIN = 64
"""Expired entries kept before a compaction is considered (a copy per admit would be O(L))."""


def decide(state: State | None, now: float, cost: float, p: Params) -> tuple[Decision, State | None]:
    t, w = (now * 1e6 + 0.5) // 1.0, p.window_us
    if state is None:
        if cost > p.limit:
            return new_decision(Decision, (False, p.limit, INF, 0.0, 0.0)), None
        expiries, cums = array("d", (t + w,)), array("d", (cost,))
        return new_decision(Decision, (True, p.limit - cost, 0.0, w / 1e6, 0.0)), (expiries, cums, 0, 1, 0.0)
    expiries, cums, head, end, base = state
    if head < end and expiries[head] <= t:
        head = bisect_right(expiries, t, head, end)  # drop the expired entries
    before = cums[head - 1] if head else base
    total = cums[end - 1] - before if head < end else 0.0
    if total + cost <= p.limit:
        if len(expiries) != end or (head >= COMPACT_MIN and 2 * head >= end):
            expiries, cums, base, end, head = expiries[head:end], cums[head:end], before, end - head, 0
        expiries.append(t + w)
        cums.append(before + total + cost)
        decision = new_decision(Decision, (True, p.limit - total - cost, 0.0, w / 1e6, 0.0))
        return decision, (expiries, cums, head, end + 1, base)
    retry = INF
    if cost <= p.limit:
        # the oldest entries that must expire before total + cost fits under the limit
        retry = (expiries[bisect_left(cums, before + total + cost - p.limit, head, end)] - t) / 1e6
    reset = (expiries[end - 1] - t) / 1e6 if head < end else 0.0
    return new_decision(Decision, (False, max(0.0, p.limit - total), retry, reset, 0.0)), state


ALGORITHM = Algorithm(
    name="sliding_log",
    summary="timestamp per admitted request; exact L in any window W (the reference), memory ~L per key",
    params_type=Params,
    params_from_policy=from_policy,
    decide=decide,
    state_ttl=lambda p: p.window_s,
    max_cost=lambda p: p.limit,
    window_bound=lambda p: (p.limit, p.window_s),
)
