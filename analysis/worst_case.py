"""The most a limiter admitted to one key inside any window, from the client's side, with the
requests that prove it: a run of admitted answers whose first was sent and last answered less
than W apart was decided inside one W, however busy the machine was."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .header_truth import Answer, by_key


@dataclass(frozen=True)
class WorstCase:
    admitted: int
    key: str = ""
    first_sent: float = 0.0
    last_done: float = 0.0

    @property
    def span_s(self) -> float:
        return self.last_done - self.first_sent


def worst_case(answers: Iterable[Answer], window_s: float) -> WorstCase:
    """Max over keys and runs of admitted answers with last ``done`` - first ``sent`` < ``window_s``
    (two pointers over each key's admitted answers, in order sent); of equal runs the shortest,
    the most convincing evidence."""
    best = WorstCase(0)
    for key, keyed in by_key(answers).items():
        admitted = [a for a in keyed if a.allowed]
        j = 0
        for i, first in enumerate(admitted):
            j = max(j, i)
            while j + 1 < len(admitted) and admitted[j + 1].done - first.sent < window_s:
                j += 1
            found = WorstCase(j - i + 1, key, first.sent, admitted[j].done)
            if found.span_s < window_s and (found.admitted, -found.span_s) > (best.admitted, -best.span_s):
                best = found
    return best
