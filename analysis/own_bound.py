"""Each run's over-admission against the bound its own policy implies (analysis/theory.py).

Why: a token bucket with burst B may admit (B + rW)/L in a window by design; measuring it against
the fixed window's 2x line calls the burst a fault. Only what passes a run's own bound is
over-admission past it. A peer's algorithm is unknown: its bound is the loosest the suite's
algorithms have under the same policy (2x for a window, (B + L)/L for a bucket of burst B).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from contract.run_info import RunPolicy

from .theory import over_admission_bound

Row = dict[str, Any]

WINDOW_BOUND = 2.0  # the fixed window's: L either side of an edge
SLACK = 1e-9  # float noise of the envelope's division by L


def bound(row: Row) -> float | None:
    """The most a run's algorithm may admit in any W by its policy, as a multiple of L (None for
    ``none``, which admits everything)."""
    policy = RunPolicy(row["limit"], row["window_s"], row.get("burst") or row["limit"])
    own = over_admission_bound(row["algorithm"], policy, row.get("params") or {})
    if own is not None or row["algorithm"] == "none":
        return own
    return max(WINDOW_BOUND, (policy.burst + policy.limit) / policy.limit)


def past(row: Row) -> float | None:
    """By how many L the run went past its own bound; None inside it or without one."""
    b = bound(row)
    return row["over_admission"] - b if b is not None and row["over_admission"] > b + SLACK else None


def verdict(rows: Sequence[Row]) -> str:
    """Every run past its own bound named with its excess, or that all with a bound stayed inside."""
    above = sorted((r for r in rows if past(r) is not None), key=lambda r: -(past(r) or 0.0))
    if above:
        named = ", ".join(f"{r['run']} (by {past(r):.2f}x)" for r in above)
        return f"{len(above)} of {len(rows)} runs went past their own bound: {named}"
    if any(bound(r) is not None for r in rows):
        return "every limiter stayed inside its own bound"
    return ""
