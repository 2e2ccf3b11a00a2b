"""A replay's decisions as numpy columns instead of a list of ``Decision`` tuples.

A tuple and its three floats cost ~180 bytes a decision: ten million of them alone would pass
the simulator's 4 GiB bound. ``DecisionColumns`` collects the store's decisions in blocks and
keeps five columns (~33 bytes a decision); it reads like the list it replaces (``len``, index,
iteration give ``Decision`` tuples), so code written for the list keeps working.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

from targets.algorithms import Decision

BLOCK = 65_536
"""Decisions held as tuples before they are packed into the columns."""
FIELDS = Decision._fields


class DecisionColumns:
    """Add decisions (``extend``; a hot loop appends to ``pending`` and calls ``pack`` when it
    holds BLOCK), then read them as columns (``columns``, ``column``) or tuples."""

    def __init__(self) -> None:
        self.pending: list[Decision] = []
        self._packed: list[tuple[np.ndarray, ...]] = []
        self._columns: tuple[np.ndarray, ...] | None = None

    @classmethod
    def repeated(cls, decision: Decision, n: int) -> DecisionColumns:
        """``n`` times the same decision (``none``'s), as columns without a tuple each."""
        out = cls()
        out._columns = (np.full(n, bool(decision[0])), *(np.full(n, float(v)) for v in decision[1:]))
        out._packed = [out._columns]
        return out

    @classmethod
    def of(cls, decisions: list[Decision] | DecisionColumns) -> tuple[np.ndarray, ...]:
        """The columns of decisions held either way (a replay's list, or its columns as they are)."""
        if isinstance(decisions, DecisionColumns):
            return decisions.columns()
        out = cls()
        out.extend(decisions)
        return out.columns()

    def extend(self, decisions: Iterable[Decision]) -> None:
        self.pending.extend(decisions)
        if len(self.pending) >= BLOCK:
            self.pack()

    def pack(self) -> None:
        """The pending decisions into the columns (``pending`` stays the same list, emptied)."""
        pending = self.pending
        if pending:
            cols = tuple(zip(*pending))
            self._packed.append((np.fromiter(cols[0], dtype=bool, count=len(pending)),
                                 *(np.fromiter(c, dtype=np.float64, count=len(pending)) for c in cols[1:])))
            pending.clear()
        self._columns = None

    def columns(self) -> tuple[np.ndarray, ...]:
        """(allowed, remaining, retry_after_s, reset_s, delay_s) over every decision so far."""
        if self.pending or self._columns is None:
            self.pack()
            if not self._packed:
                return (np.zeros(0, dtype=bool), *(np.zeros(0) for _ in FIELDS[1:]))
            self._columns = tuple(np.concatenate(c) for c in zip(*self._packed))
            self._packed = [self._columns]
        return self._columns

    def column(self, name: str) -> np.ndarray:
        return self.columns()[FIELDS.index(name)]

    def __len__(self) -> int:
        return sum(len(p[0]) for p in self._packed) + len(self.pending)

    def __getitem__(self, i: int) -> Decision:
        cols = self.columns()
        return Decision(bool(cols[0][i]), *(float(c[i]) for c in cols[1:]))

    def __eq__(self, other: object) -> bool:
        """Equal to the same decisions, as columns or as a list (what a test compares)."""
        if isinstance(other, DecisionColumns):
            return all(np.array_equal(a, b) for a, b in zip(self.columns(), other.columns()))
        if isinstance(other, list):
            return len(other) == len(self) and list(self) == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, as the list it replaces

    def __iter__(self) -> Iterator[Decision]:
        cols = self.columns()
        return map(Decision, cols[0].tolist(), *(c.tolist() for c in cols[1:]))
