"""The downstream's service times as one seeded stream, drawn alike by the live downstream
(targets/downstream.py) and its model in virtual time (harness/sim/downstream_model.py).

With the same seed both give their k-th call the same time (common random numbers): a live run
and its virtual twin then differ by what the system does to the calls, not by the luck of their
draws. Without it the comparison is of two independent samples: the P99 of the default
campaign's unhealthy_downstream x adaptive moves 387-541 ms (5th-95th percentile) from one draw
of the downstream to the next, more than the 25% the twin is asked to agree within.

numpy's generator gives the same standard normals however many are drawn at a time, so a stream
read in blocks (the model's, for speed) and one read a value at a time agree exactly.
"""

from __future__ import annotations

import math

import numpy as np

DRAW_BLOCK = 65_536
"""Standard normals drawn at a time (a draw per call would cost the model more than its queue)."""


class ServiceTimes:
    """``next()``: the next call's service time before its health phase shapes it,
    ``median x exp(sigma x N(0, 1))``; the median itself when there is nothing to draw."""

    def __init__(self, median_s: float, sigma: float, seed: int | None, block: int = DRAW_BLOCK) -> None:
        self.median_s = median_s
        self.sigma = sigma
        self.drawn = median_s > 0 and bool(sigma)
        """False: every call takes the median, and no draw is made."""
        self._rng = np.random.default_rng(seed)
        self._block = block
        self._z: list[float] = []
        self._next = 0

    def next(self) -> float:
        if not self.drawn:
            return self.median_s
        if self._next >= len(self._z):
            self._z, self._next = self._rng.standard_normal(self._block).tolist(), 0
        z = self._z[self._next]
        self._next += 1
        return self.median_s * math.exp(self.sigma * z)

    def take(self, n: int) -> list[float]:
        """The next ``n`` of ``next()``, in one list (the model's hot loops read them so)."""
        if not self.drawn:
            return [self.median_s] * n
        median, sigma, exp = self.median_s, self.sigma, math.exp
        out: list[float] = []
        while len(out) < n:
            if self._next >= len(self._z):
                self._z, self._next = self._rng.standard_normal(self._block).tolist(), 0
            chunk = self._z[self._next:self._next + n - len(out)]
            self._next += len(chunk)
            out.extend([median * exp(sigma * z) for z in chunk])
        return out
