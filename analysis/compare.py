"""Compare two results folders run by run and flag regressions of B against A.

Regressions: P99 latency (from the intended send time) grew by ``p99_ratio`` or more (default:
doubled); over-admission rose by more than ``tolerance`` (in multiples of L); the legitimate
rejection rate rose by more than ``tolerance`` (a fraction: 0.01 = one percentage point).
Both folders are analysed from their raw files, so a stale summary.json cannot mislead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .analyze import analyze
from .loader import LeftOut, load_results

MEASURES = (
    ("over_admission", "over-admission (x L)"),
    ("rejected_legit_rate", "legit rejected (share)"),
    ("latency_p99_intended_ms", "P99 ms (intended)"),
    ("cpu_target_ms_per_1k", "target CPU ms/1k"),
    ("goodput_rps", "goodput /s"),
    ("false_admits", "false admits"),
)


@dataclass
class Comparison:
    deltas: list[dict[str, Any]]  # run, measure, a, b, change
    regressions: list[str]
    only_a: list[str]
    only_b: list[str]
    left_out: dict[str, list[LeftOut]] = field(default_factory=dict)


def _rows(root: Path) -> tuple[dict[str, dict[str, Any]], list[LeftOut]]:
    folder = analyze(load_results(root))
    return {a.run.name: a.row for a in folder.runs}, folder.left_out


def _regressions(run: str, a: dict[str, Any], b: dict[str, Any], p99_ratio: float, tolerance: float) -> list[str]:
    out = []
    pa, pb = a.get("latency_p99_intended_ms"), b.get("latency_p99_intended_ms")
    if pa is not None and pb is not None and pa > 0 and pb >= p99_ratio * pa:
        out.append(f"{run}: P99 {pa:.1f} ms -> {pb:.1f} ms ({pb / pa:.1f}x, threshold {p99_ratio:g}x)")
    oa, ob = a.get("over_admission"), b.get("over_admission")
    if oa is not None and ob is not None and ob > oa + tolerance:
        out.append(f"{run}: over-admission rose {oa:.2f}x -> {ob:.2f}x")
    la, lb = a.get("rejected_legit_rate"), b.get("rejected_legit_rate")
    if la is not None and lb is not None and lb > la + tolerance:
        out.append(f"{run}: legit rejections rose {100 * la:.2f}% -> {100 * lb:.2f}%")
    return out


def compare(root_a: Path, root_b: Path, p99_ratio: float = 2.0, tolerance: float = 0.01) -> Comparison:
    """Raises ResultsError when either folder is not a results folder."""
    rows_a, left_a = _rows(Path(root_a))
    rows_b, left_b = _rows(Path(root_b))
    both = [name for name in rows_a if name in rows_b]
    result = Comparison([], [], sorted(set(rows_a) - set(rows_b)), sorted(set(rows_b) - set(rows_a)),
                        {"A": left_a, "B": left_b})
    for name in both:
        a, b = rows_a[name], rows_b[name]
        for measure, _ in MEASURES:
            va, vb = a.get(measure), b.get(measure)
            change = None if va is None or vb is None else vb - va
            result.deltas.append({"run": name, "measure": measure, "a": va, "b": vb, "change": change})
        result.regressions.extend(_regressions(name, a, b, p99_ratio, tolerance))
    return result


def _num(value: Any) -> str:
    if value is None:
        return "n/a"
    return f"{value:,}" if isinstance(value, int) else f"{value:.4g}"


def format_text(c: Comparison, label_a: str, label_b: str) -> str:
    """A plain-text report: deltas per run, then what was only on one side, then regressions."""
    labels = dict(MEASURES)
    lines = [f"A = {label_a}", f"B = {label_b}", ""]
    header = f"{'run':<48} {'measure':<24} {'A':>12} {'B':>12} {'B - A':>12}"
    lines += [header, "-" * len(header)]
    for d in c.deltas:
        if d["a"] is None and d["b"] is None:
            continue
        change = "n/a" if d["change"] is None else f"{d['change']:+.4g}"
        lines.append(f"{d['run']:<48} {labels[d['measure']]:<24} {_num(d['a']):>12} {_num(d['b']):>12} {change:>12}")
    for side, names in (("A", c.only_a), ("B", c.only_b)):
        lines += [f"only in {side}: {name}" for name in names]
    for side, left in c.left_out.items():
        lines += [f"left out of {side}: {x.name}: {x.reason}" for x in left]
    lines.append("")
    if c.regressions:
        lines += [f"REGRESSIONS ({len(c.regressions)}):", *[f"  {r}" for r in c.regressions]]
    else:
        lines.append("no regressions")
    return "\n".join(lines) + "\n"
