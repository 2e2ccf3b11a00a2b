"""What `validate --traffic` reports of one replay, summed a block at a time: counts per key, route,
class and time bin, and a key's worst burst, each the same as over the whole log at once."""

from __future__ import annotations

import numpy as np

from analysis.metrics import max_window_cost

TIME_BINS = (1, 10, 60, 300, 900, 3600, 21600, 86400)
"""Chart bin widths (s): the smallest that gives at most ~120 bins over the log's span. Each
divides the next, and bins start at multiples of their width: a finer count merges exactly into
a coarser one."""


def bin_width(span: float) -> int:
    return next((b for b in TIME_BINS if span / b <= 120), TIME_BINS[-1])


class Bins:
    """Requests and refusals per time bin, the width chosen from the span the times really
    cover (a spread second ends up to 1 s past the last logged one): counted at the width of
    ``first..upper`` and merged into a coarser one at the end if the span asks for it."""

    def __init__(self, first: float, upper: float) -> None:
        self.first, self.last = first, -np.inf
        self.width = bin_width(upper - first)
        self.start = float(np.floor(first / self.width) * self.width)
        n = int((upper - self.start) // self.width) + 1
        self.requests = np.zeros(n, dtype=np.int64)
        self.refused = np.zeros(n, dtype=np.int64)

    def add(self, t: np.ndarray, refused: np.ndarray) -> None:
        if not len(t):
            return
        index = ((t - self.start) // self.width).astype(np.int64)
        n = len(self.requests)
        self.requests += np.bincount(index, minlength=n)
        self.refused += np.bincount(index[refused], minlength=n)
        self.last = max(self.last, float(t[-1]))

    def result(self) -> tuple[int, float, list[int], list[int]]:
        """(width s, first bin's start, requests per bin, refusals per bin) up to the last time seen."""
        if self.last == -np.inf:
            return 1, 0.0, [], []
        width = bin_width(self.last - self.first)
        start = float(np.floor(self.first / width) * width)
        factor = width // self.width
        merged = (np.arange(len(self.requests)) + round((self.start - start) / self.width)) // factor
        n = int((self.last - start) // width) + 1
        requests = np.bincount(merged, weights=self.requests, minlength=n)[:n].astype(np.int64)
        refused = np.bincount(merged, weights=self.refused, minlength=n)[:n].astype(np.int64)
        return width, start, requests.tolist(), refused.tolist()


class Tally:
    """One replay's counts: per key (and per limit that refused), per route, per class, per bin."""

    def __init__(self, keys: int, limits: int, routes: int, classes: int, bins: Bins) -> None:
        self.requests = self.refused = 0
        self.per_key = np.zeros(keys, dtype=np.int64)
        self.refused_by_limit = np.zeros((limits, keys), dtype=np.int64)
        self.per_route = np.zeros(routes, dtype=np.int64)
        self.refused_route = np.zeros(routes, dtype=np.int64)
        self.per_class = np.zeros(classes, dtype=np.int64)
        self.refused_class = np.zeros(classes, dtype=np.int64)
        self.bins = bins

    def add(self, t: np.ndarray, key: np.ndarray, route: np.ndarray, klass: np.ndarray, refused_by: np.ndarray) -> None:
        """One block: per request its time, key code, route code, class and refusing limit (-1: admitted)."""
        refused = refused_by >= 0
        self.requests += len(t)
        self.refused += int(refused.sum())
        for total, codes in ((self.per_key, key), (self.per_route, route), (self.per_class, klass)):
            total += np.bincount(codes, minlength=len(total))
        for total, codes in ((self.refused_route, route), (self.refused_class, klass)):
            total += np.bincount(codes[refused], minlength=len(total))
        for limit in range(len(self.refused_by_limit)):
            mine = refused_by == limit
            if mine.any():
                self.refused_by_limit[limit] += np.bincount(key[mine], minlength=self.refused_by_limit.shape[1])
        self.bins.add(t, refused)

    @property
    def refused_per_key(self) -> np.ndarray:
        return self.refused_by_limit.sum(axis=0)


class Sweep:
    """The most cost in any half-open ``span`` of one key's requests (``max_window_cost``), fed a
    block at a time: the requests a window starting in the last block could still reach are
    carried into the next, so the maximum is that of the whole sequence."""

    def __init__(self, span: float) -> None:
        self.span = span
        self.worst = 0.0
        self._t = np.empty(0)
        self._cost = np.empty(0)

    def add(self, t: np.ndarray, cost: np.ndarray) -> None:
        if not len(t):
            return
        t, cost = np.concatenate([self._t, t]), np.concatenate([self._cost, cost])
        self.worst = max(self.worst, max_window_cost(t, cost, self.span))
        reach = t > t[-1] - self.span * (1 + 1e-9) - 1e-9  # generous: an extra request carried is only measured again
        self._t, self._cost = t[reach], cost[reach]
