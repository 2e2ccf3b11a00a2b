"""Whether fresh keys get the same quota, model-free: every model of the suite gives a key it has
never seen its whole quota, the same for each (L; a bucket's B, and the few tokens a slow burst
refills; a clock-aligned window up to 2L where a burst crosses its edge). A limiter that refuses
a share of requests at random, or whose limit changes with the time or the load, does not: the
first bursts until refused of a session's fresh keys then differ by more than that. No fit can
explain it, whatever share of decisions it repeats: a random refusal ends a burst as a limit does,
and a model that blocks a key after each refusal then repeats 95% or more of them (measured: a
sliding log of 5 per 0.5 s refusing a fifth at random was said to behave like one of 5 per 0.062
s with a 0.495 s block, 100% held back)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from harness.sim.fingerprint import ROUND_TRIPS, median_round_trip

from .endpoint import Sent
from .hunt import seen

BURST_ROLES = ("learn", "check-fields", "explore-gaps", "check-gaps", "check-after-refusals", "hunt-gaps")
"""The roles whose keys begin with a burst until refused (``hunt.py``, ``check.py``)."""
MIN_KEYS = 3
"""First bursts needed before their spread says anything."""


@dataclass(frozen=True)
class FirstBursts:
    """What each key that began with a burst until refused was admitted before that refusal."""

    admitted: tuple[int, ...] = ()

    @property
    def uneven(self) -> bool:
        """Whether one fresh key got less than half of what another did: more than any model's spread."""
        return len(self.admitted) >= MIN_KEYS and 2 * min(self.admitted) < max(self.admitted)

    def sentence(self) -> str:
        return (f"fresh keys' first bursts until refused were admitted {min(self.admitted)} to {max(self.admitted)} "
                f"({len(self.admitted)} keys), where every model of the suite gives each fresh key the same quota")


def first_bursts(log: Sequence[Sent]) -> FirstBursts:
    """The first bursts of ``log``'s keys in ``BURST_ROLES``: a key's requests up to its first
    refusal, each sent within ``ROUND_TRIPS`` median round trips of the last one's answer (a key
    whose first refusal came after an idle gap, or that was never refused, is left out); and a
    burst of 0 for a key of any role refused at its first request (a fresh key with nothing)."""
    gap = ROUND_TRIPS * median_round_trip(seen([s.answer for s in log]))
    keys: dict[str, list[Sent]] = {}
    for s in log:
        keys.setdefault(s.answer.key, []).append(s)
    out = []
    for mine in keys.values():
        refused = next((i for i, s in enumerate(mine) if not s.answer.allowed), None)
        if refused == 0 or (refused is not None and mine[0].role in BURST_ROLES
                            and all(b.answer.sent - a.answer.done <= gap for a, b in pairwise(mine[:refused + 1]))):
            out.append(refused)
    return FirstBursts(tuple(out))
