"""Repeats of one run as one figure with its noise: the median with min-max (a bootstrap 95%
interval from BOOTSTRAP_FROM repeats on), and the one rule that says whether two figures differ.

Pure: summary rows in, grouped rows out. A group is the runs of one scenario, algorithm, store and
system that differ only in their repeat (``<run>__r<k>``); its row holds the median of each
numeric field, ``repeats`` (N), ``spread`` ({field: [low, high]}), ``spread_kind``, the names
of its runs and their ``seeds`` (run.json's, each repeat's own traffic). A single run is a group
of one, its spread only the intervals it measured itself (OWN_INTERVAL).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from contract.schema import split_repeat

Row = dict[str, Any]

BOOTSTRAP_FROM = 5
"""From this many repeats the spread is a bootstrap 95% interval of the median, below it min-max."""
SINGLE_RUN_NOISE = 0.05
"""Without repeats nothing measures the noise: figures closer than this share of the larger one
are called within noise (live P99 and CPU move by about this much from run to run here)."""
EXACT_DIGITS = 3
"""Virtual-time figures that agree to this many significant digits are tied (962.866 and 962.871 ms:
both 963 as written), never ranked by a difference no sentence shows."""
MIN_MAX, CI95 = "min-max", "95% CI"
IDENTITY = ("scenario", "algorithm", "store", "system")
NOT_MEASURES = ("repeat", "seed", "limit", "window_s", "burst")
"""Numeric fields that say what a run was, not what it measured: never a median."""
OWN_INTERVAL = {"cpu_target_us_per_req": ("cpu_target_us_per_req_low", "cpu_target_us_per_req_high")}
"""Figures one run measures with their own 95% interval (a regression's): a single run's spread."""


def group_name(run: str) -> str:
    return split_repeat(run)[0]


def _group_key(row: Row) -> tuple[Any, ...]:
    """What the repeats of one run share: its identity and its folder's name without the repeat."""
    return (*(row.get(k) for k in IDENTITY), group_name(row["run"]))


def _numeric(values: Sequence[Any]) -> bool:
    return all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in values)


def _interval(values: np.ndarray, seed: int) -> tuple[float, float]:
    if len(values) < BOOTSTRAP_FROM or np.ptp(values) == 0:
        return float(values.min()), float(values.max())
    from scipy import stats  # here: at the top, ~0.6 s every command paid at start

    ci = stats.bootstrap((values,), np.median, confidence_level=0.95, n_resamples=2000, method="percentile",
                         random_state=np.random.default_rng(seed)).confidence_interval
    return float(ci.low), float(ci.high)


def _own(row: Row) -> Row:
    """A single run as its group: no repeats to spread, the intervals it measured itself."""
    spread = {f: [row[lo], row[hi]] for f, (lo, hi) in OWN_INTERVAL.items() if row.get(f) is not None}
    return {**row, "run": group_name(row["run"]), "repeats": 1, "runs": [row["run"]], "seeds": [row.get("seed")],
            "spread": spread, "spread_kind": CI95}


def _merge(rows: Sequence[Row]) -> Row:
    """One group's row: the first row's fields, every numeric field replaced by its median."""
    if len(rows) == 1:
        return _own(rows[0])
    out: Row = {**rows[0], "run": group_name(rows[0]["run"]), "repeats": len(rows), "runs": [r["run"] for r in rows],
                "seeds": [r.get("seed") for r in rows]}
    spread: dict[str, list[float]] = {}
    for field in rows[0]:
        values = [r.get(field) for r in rows]
        if field in NOT_MEASURES or not _numeric(values):
            continue
        arr = np.asarray(values, dtype=np.float64)
        median = float(np.median(arr))
        out[field] = int(median) if all(isinstance(v, int) for v in values) and median.is_integer() else median
        spread[field] = list(_interval(arr, seed=len(spread)))
    out["spread"], out["spread_kind"] = spread, CI95 if len(rows) >= BOOTSTRAP_FROM else MIN_MAX
    return out


def group(rows: Sequence[Row]) -> list[Row]:
    """Rows grouped by run (repeats together), in the order each group first appears."""
    groups: dict[tuple[Any, ...], list[Row]] = {}
    for r in rows:
        groups.setdefault(_group_key(r), []).append(r)
    return [_merge(rs) for rs in groups.values()]


def interval(row: Row, field: str) -> tuple[float, float]:
    """A figure's interval: its group's spread, else (a run's row as summary.json keeps it) the
    interval the run measured itself (OWN_INTERVAL), else the figure alone."""
    value = row[field]
    spread = (row.get("spread") or {}).get(field)
    if spread is None and field in OWN_INTERVAL:
        own = [row.get(name) for name in OWN_INTERVAL[field]]
        spread = own if None not in own else None
    low, high = spread if spread is not None else (value, value)
    return float(low), float(high)


def exact(*rows: Row) -> bool:
    """Single runs in virtual time: replayed, they give the same figures, so they have no noise."""
    return all(r.get("kind") == "virtual" and r.get("repeats", 1) == 1 for r in rows)


def apart(a: Row, b: Row, field: str) -> bool:
    """Whether two groups' figures differ beyond their noise: intervals that do not overlap; for
    two single runs (no interval), a difference above SINGLE_RUN_NOISE of the larger; when both are
    exact (virtual time), any difference in EXACT_DIGITS significant digits."""
    (alo, ahi), (blo, bhi) = interval(a, field), interval(b, field)
    if ahi < blo or bhi < alo:
        if exact(a, b):
            return f"{a[field]:.{EXACT_DIGITS}g}" != f"{b[field]:.{EXACT_DIGITS}g}"
        if a.get("repeats", 1) > 1 or b.get("repeats", 1) > 1:
            return True
        return abs(a[field] - b[field]) > SINGLE_RUN_NOISE * max(abs(a[field]), abs(b[field]))
    return False


def apart_from_all(row: Row, others: Sequence[Row], field: str) -> bool:
    return all(apart(row, o, field) for o in others if o is not row)


def with_spread(row: Row, field: str, text: str, fmt: Any) -> str:
    """``text`` (the median as written), then ``(low-high)`` when the row has a spread for it."""
    span = (row.get("spread") or {}).get(field)
    if not span or span[0] == span[1]:
        return text
    return f"{text} ({fmt(span[0])}-{fmt(span[1])})"
