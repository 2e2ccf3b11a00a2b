"""Client-side adaptive throttling, as in Google's SRE book ("Handling Overload", client-side
throttling): each client remembers, over a trailing window, how many requests its application
attempted and how many the backend accepted, and rejects a new request locally, before it
is sent, with probability ``max(0, (requests - K * accepts) / (requests + 1))``. Requests
rejected locally count as attempted, so the damping grows while the backend keeps refusing.
K = 2 (the book's default) lets through about twice what the backend accepts.

Pure: the caller supplies the times and the uniform numbers, so a seeded model and a live
client make the same choices on the same answers.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

K = 2.0
WINDOW_S = 120.0
"""The book's clients keep two minutes of history."""


def reject_probability(requests: int, accepts: int, k: float = K) -> float:
    return max(0.0, (requests - k * accepts) / (requests + 1))


@dataclass
class AdaptiveThrottle:
    k: float = K
    window_s: float = WINDOW_S
    _requests: list[float] = field(default_factory=list)
    _accepts: list[float] = field(default_factory=list)
    """Times, kept sorted (a retry may be scheduled ahead of answers still to come)."""

    def _within(self, times: list[float], now: float) -> int:
        return bisect.bisect_right(times, now) - bisect.bisect_right(times, now - self.window_s)

    def probability(self, now: float) -> float:
        """The chance a request attempted at ``now`` is rejected locally."""
        return reject_probability(self._within(self._requests, now), self._within(self._accepts, now), self.k)

    def attempt(self, now: float, uniform: float) -> bool:
        """Attempt one request at ``now``: True if it is sent, False if rejected locally
        (``uniform`` in [0, 1) is below the rejection probability). Counted either way."""
        sent = uniform >= self.probability(now)
        bisect.insort(self._requests, now)
        return sent

    def sent_without_asking(self, now: float) -> None:
        """A request that went out without the throttle (a first send fixed in advance)."""
        bisect.insort(self._requests, now)

    def accepted(self, now: float) -> None:
        """The backend accepted the request sent at ``now``."""
        bisect.insort(self._accepts, now)
