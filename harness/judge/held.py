"""Requests a limiter held instead of refusing them (shaping), seen from outside as added latency
at admission: Traefik holds a request up to 1/(2 x rate) before serving it, NGINX's ``limit_req``
without ``nodelay`` paces every request past the burst at the rate. A client reads no 429, only
slowness, so a verdict that counts refusals alone says nothing about it.

The baseline is a key's first request: a fresh key has its whole quota, so it is never held, and
its round trip holds whatever the endpoint itself takes (its downstream included). An admitted
request is slow when it took ``HOLD_S`` (or four times the baseline's spread) longer than the
baseline's median. A busy moment of the client's machine makes a request slow too, but at random;
a limiter holds only where a key is at its limit, so a held request is followed, on its key, by
a refusal or by another slow admission (paced one after the other). Shaping is reported when at
least ``MIN_HELD`` slow admissions were followed so, and they are at least ``PACED_SHARE`` of the
slow ones (a key's last request, with nothing after it, is not counted either way).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from analysis.header_truth import Answer
from analysis.latency import nearest_rank

HOLD_S = 0.05
"""Added latency below this is not told apart from an endpoint's own variation."""
MIN_HELD = 3
PACED_SHARE = 0.8


@dataclass(frozen=True)
class Held:
    """The admitted requests the limiter held: how many, of how many admitted, and how long."""

    requests: int
    admitted: int
    baseline_s: float
    """The median round trip of a key's first request (never held)."""
    median_s: float
    max_s: float
    """The held requests' added latency (their round trip less ``baseline_s``): median and most."""

    def sentence(self) -> str:
        return (f"held, not refused: {self.requests} of {self.admitted} admitted requests answered "
                f"{1000 * self.median_s:,.0f} ms later than a fresh key's first ({1000 * self.baseline_s:,.1f} ms) at the "
                f"median, {1000 * self.max_s:,.0f} ms at most, each where its key was at the limit: the limiter delays "
                "requests it could refuse (shaping), and a client reads slowness, not a 429")

    def doc(self) -> dict[str, float | int]:
        return {"requests": self.requests, "admitted": self.admitted, "baseline_s": round(self.baseline_s, 6),
                "median_s": round(self.median_s, 6), "max_s": round(self.max_s, 6)}


def held(answers: Sequence[Answer]) -> Held | None:
    """The requests held in ``answers`` (in the order they were sent), or None when none is
    shown (module doc)."""
    by_key: dict[str, list[Answer]] = {}
    for a in answers:
        by_key.setdefault(a.key, []).append(a)
    firsts = np.array([mine[0].done - mine[0].sent for mine in by_key.values() if mine[0].allowed])
    if len(firsts) < MIN_HELD:
        return None
    baseline = float(nearest_rank(firsts, 50.0) or 0.0)
    slow_after = baseline + max(HOLD_S, 4 * (float(nearest_rank(firsts, 90.0) or 0.0) - baseline))

    def slow(a: Answer) -> bool:
        return a.allowed and a.done - a.sent > slow_after

    slow_ones, paced = 0, []
    for mine in by_key.values():
        for a, after in pairwise(mine[1:]):  # a key's last request has nothing after it to tell
            if slow(a):
                slow_ones += 1
                if not after.allowed or slow(after):
                    paced.append(a.done - a.sent - baseline)
    if len(paced) < MIN_HELD or len(paced) < PACED_SHARE * slow_ones:
        return None
    return Held(len(paced), sum(a.allowed for a in answers), baseline, float(nearest_rank(np.array(paced), 50.0) or 0.0),
                max(paced))
