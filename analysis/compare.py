"""Compare two results folders run by run and judge B (the candidate) against A (the baseline).

Regressions: P99 latency (from the intended send time) grew by ``p99_ratio`` or more (default:
doubled); over-admission rose by more than ``tolerance`` (in multiples of L); the legitimate
rejection rate rose by more than ``tolerance`` (a fraction: 0.01 = one percentage point). When
both sides repeated the run, a change is called only when it passes the threshold and the two
intervals (analysis.spread) do not overlap, as criterion and hyperfine call a change only beyond
the noise; with one run a side, the bare change against the threshold. A run of A that B lacks,
cannot read or failed makes the comparison incomplete: a gate must not pass what it cannot judge.
Both folders are analysed from their raw files, so a stale summary.json cannot mislead.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from contract.errors import BadInput

from .analyze import analyze
from .labels import cell, header
from .loader import LeftOut, load_results
from .spread import apart, group, group_name, with_spread

Row = dict[str, Any]


def _times(v: float) -> str:
    return f"{v:.2f}x"


def _pct(v: float) -> str:
    return f"{100 * v:.2f}%"


def _ms(v: float) -> str:
    return f"{v:,.1f} ms"


MEASURES: tuple[tuple[str, str, Callable[[float], str]], ...] = tuple(
    (name, header(name), partial(cell, name))
    for name in ("over_admission", "in_flight_ratio", "rejected_legit_rate", "latency_p99_intended_ms",
                  "cpu_target_ms_per_1k", "cpu_target_us_per_req", "goodput_rps", "false_admits"))
"""What compare shows, in the report's names and formats (analysis.labels): units in the header,
plain numbers in the cells; the verdict's sentences carry their units."""


class ThresholdError(BadInput):
    """A threshold no comparison could be judged by (NaN, infinite, negative)."""


@dataclass
class Comparison:
    deltas: list[Row]  # run, measure, a, b, change, a_text, b_text
    regressions: list[str]
    only_a: list[str]
    only_b: list[str]
    left_out: dict[str, list[LeftOut]] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    """Runs of A that B lacks, cannot read or failed: the comparison cannot judge them."""
    repeated: bool = False
    """Both sides repeated their runs: regressions are called with intervals."""

    def changed(self) -> list[Row]:
        return [d for d in self.deltas if d["change"] is not None and d["change"] != 0]


def check_thresholds(p99_ratio: float, tolerance: float) -> None:
    """Raises ThresholdError naming the bad one."""
    if not math.isfinite(p99_ratio) or p99_ratio <= 1.0:
        raise ThresholdError(f"--threshold must be a finite ratio above 1, got {p99_ratio:g}")
    if not math.isfinite(tolerance) or tolerance < 0:
        raise ThresholdError(f"--tolerance must be a finite number >= 0, got {tolerance:g}")


def _rows(root: Path) -> tuple[dict[str, Row], list[LeftOut]]:
    folder = analyze(load_results(root))
    return {g["run"]: g for g in group(folder.rows)}, folder.left_out


def _beyond_noise(a: Row, b: Row, name: str, repeated: bool) -> bool:
    return not repeated or apart(a, b, name)


def _regressions(run: str, a: Row, b: Row, p99_ratio: float, tolerance: float, repeated: bool) -> list[str]:
    out = []
    noise = " (intervals apart)" if repeated else ""
    pa, pb = a.get("latency_p99_intended_ms"), b.get("latency_p99_intended_ms")
    if pa is not None and pb is not None and pa > 0 and pb >= p99_ratio * pa and \
            _beyond_noise(a, b, "latency_p99_intended_ms", repeated):
        out.append(f"{run}: P99 {with_spread(a, 'latency_p99_intended_ms', _ms(pa), _ms)} -> "
                   f"{with_spread(b, 'latency_p99_intended_ms', _ms(pb), _ms)} ({pb / pa:.1f}x, threshold {p99_ratio:g}x){noise}")
    for name, label, fmt in (("over_admission", "over-admission", _times), ("rejected_legit_rate", "legit rejections", _pct)):
        va, vb = a.get(name), b.get(name)
        if va is not None and vb is not None and vb > va + tolerance and _beyond_noise(a, b, name, repeated):
            out.append(f"{run}: {label} rose {with_spread(a, name, fmt(va), fmt)} -> {with_spread(b, name, fmt(vb), fmt)} "
                       f"(tolerance {tolerance:g}){noise}")
    return out


def compare(root_a: Path, root_b: Path, p99_ratio: float = 2.0, tolerance: float = 0.01) -> Comparison:
    """Raises ResultsError when either folder is not a results folder, ThresholdError on a bad threshold."""
    check_thresholds(p99_ratio, tolerance)
    rows_a, left_a = _rows(Path(root_a))
    rows_b, left_b = _rows(Path(root_b))
    unreadable_b = {group_name(x.name) for x in left_b}
    in_a = set(rows_a) | {group_name(x.name) for x in left_a}
    result = Comparison([], [], sorted(in_a - set(rows_b)), sorted(set(rows_b) - in_a), {"A": left_a, "B": left_b})
    result.missing = sorted((set(rows_a) - set(rows_b)) | (set(rows_a) & unreadable_b))
    result.repeated = any(r.get("repeats", 1) > 1 for r in rows_a.values()) and \
        any(r.get("repeats", 1) > 1 for r in rows_b.values())
    for name in (n for n in rows_a if n in rows_b):
        a, b = rows_a[name], rows_b[name]
        for measure, _, fmt in MEASURES:
            va, vb = a.get(measure), b.get(measure)
            change = None if va is None or vb is None else vb - va
            result.deltas.append({"run": name, "measure": measure, "a": va, "b": vb, "change": change,
                                  "change_text": "n/a" if change is None else ("+" if change >= 0 else "-") + fmt(abs(change)),
                                  "a_text": "n/a" if va is None else with_spread(a, measure, fmt(va), fmt),
                                  "b_text": "n/a" if vb is None else with_spread(b, measure, fmt(vb), fmt)})
        result.regressions.extend(_regressions(name, a, b, p99_ratio, tolerance, result.repeated))
    return result


def verdict(c: Comparison, allow_missing: bool = False) -> list[str]:
    """The lines that open the output: the verdict, then why."""
    basis = "with intervals (both sides repeated)" if c.repeated else "bare changes against the thresholds (one run a side)"
    lines = []
    if c.missing and not allow_missing:
        lines.append(f"INCOMPLETE: {len(c.missing)} run(s) of A missing, unreadable or failed in B "
                     "(--allow-missing to judge the rest)")
    if c.regressions:
        lines.append(f"REGRESSIONS ({len(c.regressions)}), judged by {basis}:")
        lines += [f"  {r}" for r in c.regressions]
    elif not (c.missing and not allow_missing):
        lines.append(f"no regressions, judged by {basis}")
    lines += [f"  missing in B: {name}" for name in c.missing]
    lines += [f"  left out of {side}: {x.name}: {x.reason}" for side, left in c.left_out.items() for x in left]
    lines += [f"  only in B: {name}" for name in c.only_b]
    return lines


def failed(c: Comparison, allow_missing: bool = False) -> bool:
    return bool(c.regressions) or (bool(c.missing) and not allow_missing)


def measure_label(measure: str) -> str:
    return next(label for name, label, _ in MEASURES if name == measure)
