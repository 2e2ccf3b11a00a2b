"""Paced clients on decimal clocks (shared by the memory and the Redis tests).

A policy (L per W, burst B) and a clock tick (1 µs, 1 ms, 1 s) are drawn so that the emission
interval T = W / L is a whole number of ticks: a client can then pace itself exactly T apart,
and its timestamps are decimals as a trace file or a millisecond clock writes them (formatted
with the tick's digits and parsed back, which is what a trace file does). Such a client must be
admitted every time; one tick early it must not be.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from hypothesis import strategies as st

from targets.algorithms import Policy

RATE_ALGORITHMS = ("gcra", "token_bucket", "leaky_bucket")
PACED_ALGORITHMS = (*RATE_ALGORITHMS, "fixed_window", "sliding_log", "sliding_window_ring")
"""Those a paced client never exceeds: sliding_window_counter's estimate counts the previous
window as evenly spread, so it rejects some paced requests by design (not by rounding)."""
TICKS = (Decimal("0.000001"), Decimal("0.001"), Decimal("0.01"), Decimal(1))


@dataclass(frozen=True)
class Paced:
    tick: Decimal
    interval: int
    """T in ticks."""
    limit: Decimal
    burst: int
    start: int
    """The first request's time, in ticks."""

    @property
    def policy(self) -> Policy:
        return Policy(float(self.limit), float(self.limit * self.interval * self.tick), float(self.burst))

    def at(self, ticks: int) -> float:
        """A time ``ticks`` after the start, as a trace file holds it: a decimal string parsed."""
        return float(str((self.start + ticks) * self.tick))

    def times(self, n: int, early: int = -1, burst: bool = True) -> list[float]:
        """The burst at the start (``burst``; else one request), then ``n`` requests exactly T
        apart; request ``early`` of them (0-based) one tick early, none if -1."""
        paced = [self.at((i + 1) * self.interval - (i == early)) for i in range(n)]
        return [self.at(0)] * (self.burst if burst else 1) + paced


def policy_for(name: str, pace: Paced) -> Policy:
    """Window algorithms count whole requests: their paced policy has a whole L (and W a whole
    number of sub-windows of whole µs for the ring, whose default is 10 sub-windows)."""
    if name in RATE_ALGORITHMS:
        return pace.policy
    limit = max(1, int(pace.limit)) * (10 if name == "sliding_window_ring" else 1)
    return Policy(float(limit), float(limit * pace.interval * pace.tick))


@st.composite
def paced(draw) -> Paced:
    tick = draw(st.sampled_from(TICKS))
    limit = draw(st.one_of(st.integers(1, 1000).map(Decimal), st.sampled_from([Decimal("0.5"), Decimal("2.5"), Decimal("7.5")])))
    interval = draw(st.integers(1, 100_000))
    # epoch-sized starts too: at 1.7e9 s a double still resolves 0.25 µs, and the µs is recovered
    start_s = draw(st.one_of(st.just(0), st.integers(0, 10_000), st.integers(1_700_000_000, 1_800_000_000)))
    start = int(start_s / tick) + draw(st.integers(0, 999))
    return Paced(tick, interval, limit, draw(st.integers(1, 10)), start)
