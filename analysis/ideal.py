"""The ideal decisions (a sliding log) replayed on a run's arrivals, for logs that do not carry
them: live targets write ``ideal_allowed`` as null, and analysis never imports the algorithms.

The convention held by every store (issue 2): a sliding log admits a request when the admitted
cost in (t - W, t] plus its cost is at most L; a rejected request consumes nothing. Sequential by
nature (each admission depends on the earlier ones), so a plain loop, but only over keys that
ever ask for more than L in a window W: the others are admitted whole (a sliding log rejects
nothing it can fit).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .metrics import key_axis, time_order_by_key


def ideal_sliding_log(t: np.ndarray, keys: pd.Series | np.ndarray, cost: np.ndarray, limit: float, window_s: float) -> np.ndarray:
    """``allowed`` of a sliding log of L per W, per key, on the same arrivals (in time order)."""
    codes, _ = pd.factorize(keys)
    order = time_order_by_key(t, codes)
    sorted_codes = codes[order]
    bounds = np.flatnonzero(np.diff(sorted_codes)) + 1
    firsts, lasts = np.concatenate(([0], bounds)), np.concatenate((bounds, [len(order)]))
    allowed = np.ones(len(order), dtype=bool)
    t, cost = t[order], cost[order]
    busy = _over_limit(t, cost, sorted_codes, firsts, limit, window_s)
    for first, last in zip(firsts[busy].tolist(), lasts[busy].tolist()):
        times, costs = t[first:last].tolist(), cost[first:last].tolist()  # Python floats: a fast loop
        expiry: list[float] = []  # admitted entries hold their expiry t + W, as the reference does
        cum = [0.0]  # admitted cost prefix sums: the window total is cum[-1] - cum[head]
        head = 0
        for i, (now, c) in enumerate(zip(times, costs), first):
            while head < len(expiry) and expiry[head] <= now:
                head += 1
            if cum[-1] - cum[head] + c <= limit:
                expiry.append(now + window_s)
                cum.append(cum[-1] + c)
            else:
                allowed[i] = False
    out = np.empty_like(allowed)
    out[order] = allowed
    return out


def _over_limit(t: np.ndarray, cost: np.ndarray, codes: np.ndarray, firsts: np.ndarray, limit: float,
                window_s: float) -> np.ndarray:
    """Per key: does any window [s, s + W) of its arrivals hold more than L? (Every window
    (t - W, t] a sliding log checks lies inside one of these.) All keys when the axis overflows."""
    if len(t) == 0:
        return np.zeros(0, dtype=bool)
    keyed = key_axis(t, codes)
    if keyed is None:
        return np.ones(len(firsts), dtype=bool)
    axis, span = keyed
    csum = np.concatenate(([0.0], np.cumsum(cost, dtype=np.float64)))
    end = np.searchsorted(axis, axis + min(round(window_s * 1e9), span), side="left")
    return np.maximum.reduceat(csum[end] - csum[np.arange(len(t))], firsts) > limit
