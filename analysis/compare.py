"""Compare two results folders and judge B (the candidate) against A (the baseline).

Every headline figure is gated, each by its own noise model (analysis.gate): over-admission,
legitimate rejections, P99, goodput and the marginal CPU per request. A change is a regression
when it passes its floor (the threshold or the tolerance) *and* lies outside the noise, all the
figures' tests together at noise.CONFIDENCE (Bonferroni). Runs are matched by what they are
(analysis.matching); what differs besides the code under test is named first, and across
different policies nothing is called a regression. A run of A that B lacks, cannot read, that
failed on either side or was degraded makes the comparison incomplete: a gate must not pass what
it cannot judge. Both folders are analysed from their raw files, so a stale summary.json cannot mislead.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from contract.errors import BadInput
from contract.schema import RUN_DEGRADED

from . import matching, noise
from .analyze import analyze
from .gate import THRESHOLD_ONLY, Judgement, Limits, Side, judge
from .labels import cell, header
from .loader import LeftOut, load_results
from .spread import group, group_name, with_spread

Row = dict[str, Any]

MEASURES: tuple[tuple[str, str, Callable[[float], str]], ...] = tuple(
    (name, header(name), partial(cell, name))
    for name in ("over_admission", "in_flight_ratio", "rejected_legit_rate", "latency_p99_intended_ms",
                  "cpu_target_ms_per_1k", "cpu_target_us_per_req", "goodput_rps", "false_admits"))
"""What compare shows, in the report's names and formats (analysis.labels): units in the header,
plain numbers in the cells; the verdict's sentences carry their units."""

SAID: dict[str, tuple[str, str, float]] = {
    "over_admission": ("over-admission", "x", 1.0),
    "rejected_legit_rate": ("legit rejections", "%", 100.0),
    "latency_p99_intended_ms": ("P99", " ms", 1.0),
    "goodput_rps": ("goodput", "/s", 1.0),
    "cpu_target_us_per_req": ("marginal CPU", " µs/req", 1.0),
}
"""How the verdict's sentences name each gated figure: its name, unit and scale."""
BELOW_RESOLUTION = "below res."


class ThresholdError(BadInput):
    """A threshold no comparison could be judged by (NaN, infinite, negative)."""


@dataclass
class Folder:
    """One side analysed: its groups by identity, each group's repeats, what was left out."""

    groups: dict[matching.Key, Row]
    members: dict[str, Row]
    left_out: list[LeftOut]
    campaign: dict[str, Any]

    def side(self, g: Row) -> Side:
        return Side(g, [self.members[name] for name in g["runs"]])


@dataclass
class Comparison:
    deltas: list[Row]  # run, measure, a, b, change, a_text, b_text
    regressions: list[str]
    only_a: list[str]
    only_b: list[str]
    left_out: dict[str, list[LeftOut]] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    """Runs not judged, with why: A's that B lacks or cannot read, failed or degraded on either side."""
    differences: list[str] = field(default_factory=list)
    """What differs between the matched runs besides the code: named before the verdict."""
    comparable: bool = True
    """False when the policies differ: no change is called a regression."""
    tests: int = 0
    """The figures judged by a noise model (the Bonferroni family)."""
    runs_a_side: str = "1 run a side"

    def changed(self) -> list[Row]:
        return [d for d in self.deltas if d["change"] is not None and d["change"] != 0]


def check_thresholds(p99_ratio: float, tolerance: float) -> None:
    """Raises ThresholdError naming the bad one."""
    if not math.isfinite(p99_ratio) or p99_ratio <= 1.0:
        raise ThresholdError(f"--threshold must be a finite ratio above 1, got {p99_ratio:g}")
    if not math.isfinite(tolerance) or tolerance < 0:
        raise ThresholdError(f"--tolerance must be a finite number >= 0, got {tolerance:g}")


def folder(root: Path, pool: Executor | None = None) -> Folder:
    """One side analysed from its raw files (ResultsError when it is not a results folder)."""
    results = load_results(root)
    analysed = analyze(results, pool=pool)
    rows = analysed.rows
    return Folder(matching.by_identity(group(rows)), {r["run"]: r for r in rows}, analysed.left_out, results.campaign)


def _text(row: Row, measure: str, fmt: Callable[[float], str]) -> str:
    value = row.get(measure)
    if value is None:
        below = measure == "cpu_target_us_per_req" and row.get("cpu_target_ms_per_1k") is not None
        return BELOW_RESOLUTION if below else "n/a"
    return with_spread(row, measure, fmt(value), fmt)


def _deltas(name: str, a: Row, b: Row) -> list[Row]:
    out = []
    for measure, _, fmt in MEASURES:
        va, vb = a.get(measure), b.get(measure)
        change = None if va is None or vb is None else vb - va
        out.append({"run": name, "measure": measure, "a": va, "b": vb, "change": change,
                    "change_text": "n/a" if change is None else ("+" if change >= 0 else "-") + fmt(abs(change)),
                    "a_text": _text(a, measure, fmt), "b_text": _text(b, measure, fmt)})
    return out


def _figure(row: Row, measure: str) -> str:
    """``100.0 (90.0-110.0) ms``: the figure, its spread, its unit."""
    _, unit, scale = SAID[measure]
    digits = 2 if measure in ("over_admission", "rejected_legit_rate") else 1
    fmt = partial(_number, scale=scale, digits=digits)
    return with_spread(row, measure, fmt(row[measure]), fmt) + unit


def _number(value: float, scale: float, digits: int) -> str:
    return f"{scale * value:,.{digits}f}"


def _why(j: Judgement, a: Side, b: Side, limits: Limits, alpha: float) -> str:
    """What judged a change: its floor (the threshold or the tolerance), then the noise model and
    its p-value against each test's level."""
    floor = {"latency_p99_intended_ms": f"{b.row[j.measure] / a.row[j.measure]:.1f}x, threshold {limits.ratio:g}x",
             "goodput_rps": f"threshold {limits.ratio:g}x" if j.model == THRESHOLD_ONLY else f"tolerance {limits.tolerance:.0%} of A's",
             "cpu_target_us_per_req": f"tolerance {limits.tolerance:.0%} of A's"}.get(j.measure, f"tolerance {limits.tolerance:g}")
    if j.measure == "rejected_legit_rate" and len(a.members) == len(b.members) == 1:
        floor = f"{a.row['rejected_legit']} of {a.row['legit_requests']} -> {b.row['rejected_legit']} of {b.row['legit_requests']}, {floor}"
    return f"{floor}; {j.model}" + ("" if j.p is None else f", p {j.p:.2g} < {alpha:.2g}")


def _sentence(run: str, j: Judgement, a: Side, b: Side, limits: Limits, alpha: float) -> str:
    moved = "fell" if j.measure == "goodput_rps" else "rose"
    change = f"{_figure(a.row, j.measure)} -> {_figure(b.row, j.measure)}"
    return f"{run}: {SAID[j.measure][0]} {moved} {change} ({_why(j, a, b, limits, alpha)})"


def _runs_a_side(pairs: list[tuple[Side, Side]]) -> str:
    counts = sorted({len(s.members) for pair in pairs for s in pair}) or [1]
    text = str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
    return f"{text} run{'s' if counts[-1] > 1 else ''} a side"


def _judge(result: Comparison, pairs: list[tuple[Side, Side]], limits: Limits) -> None:
    judged = [(a, b, j) for a, b in pairs for j in judge(a, b, limits)]
    result.tests = sum(j.p is not None for _, _, j in judged)
    alpha = noise.alpha_each(result.tests)
    result.regressions = [_sentence(b.row["run"], j, a, b, limits, alpha) for a, b, j in judged if j.flagged(alpha)]


def _degraded(side: Side) -> str | None:
    """Why a side is no measure of its limiter (compare refuses it), or None: decisions from a
    fallback, or a run its runner marked degraded (failed requests: run.json ``degraded_reasons``)."""
    if any(m.get("degraded_share") for m in side.members):
        return "degraded (decisions from a fallback)"
    return "degraded (run marked degraded)" if any(m.get("status") == RUN_DEGRADED for m in side.members) else None


def compare(root_a: Path, root_b: Path, p99_ratio: float = 2.0, tolerance: float = 0.01) -> Comparison:
    """Raises ResultsError when either folder is not a results folder, ThresholdError on a bad threshold."""
    check_thresholds(p99_ratio, tolerance)
    return judged(folder(Path(root_a)), folder(Path(root_b)), Limits(p99_ratio, tolerance))


def judged(fa: Folder, fb: Folder, limits: Limits) -> Comparison:
    """The comparison of two analysed folders (``compare``'s work once both are read)."""
    names_a = {g["run"] for g in fa.groups.values()}
    names_b = {g["run"] for g in fb.groups.values()}
    keys = [k for k in fa.groups if k in fb.groups]
    left_b = {group_name(x.name) for x in fb.left_out}
    result = Comparison([], [], sorted(names_a - {fa.groups[k]["run"] for k in keys}),
                        sorted(names_b - {fb.groups[k]["run"] for k in keys}), {"A": fa.left_out, "B": fb.left_out})
    pairs = [(fa.side(fa.groups[k]), fb.side(fb.groups[k])) for k in keys]
    rows = [(a.row, b.row) for a, b in pairs]
    result.differences = [*matching.scenarios(list(fa.groups.values()), list(fb.groups.values())),
                          *matching.differences(rows), *matching.machine(fa.campaign, fb.campaign, rows)]
    result.comparable = not matching.policies_differ(rows)
    degraded = {b.row["run"]: why for a, b in pairs if (why := _degraded(a) or _degraded(b))}
    result.missing = {**{n: "missing in B" for n in result.only_a}, **{n: "unreadable or failed in B" for n in left_b},
                      **{group_name(x.name): "unreadable or failed in A" for x in fa.left_out},
                      **degraded}
    result.runs_a_side = _runs_a_side(pairs)
    for a, b in pairs:
        result.deltas.extend(_deltas(b.row["run"], a.row, b.row))
    if result.comparable:
        _judge(result, [(a, b) for a, b in pairs if b.row["run"] not in degraded], limits)
    return result


def verdict(c: Comparison, allow_missing: bool = False) -> list[str]:
    """The lines that open the output: what differs besides the code, the verdict, then why."""
    tested = f"at {noise.CONFIDENCE:.0%} confidence family-wise (Bonferroni over {c.tests} tests)" if c.tests else \
        "with no figure to test against noise (each exact or against its threshold alone)"
    basis = f"{tested}, {c.runs_a_side}"
    lines = list(c.differences)
    if not c.comparable:
        lines.append("NOT COMPARABLE: the policies differ, so no change is called a regression")
    if c.missing and not allow_missing:
        lines.append(f"INCOMPLETE: {len(c.missing)} run(s) missing, unreadable, failed or degraded "
                     "(--allow-missing to judge the rest)")
    if c.regressions:
        lines.append(f"REGRESSIONS ({len(c.regressions)}) {basis}:")
        lines += [f"  {r}" for r in c.regressions]
    elif c.comparable and not (c.missing and not allow_missing):
        lines.append(f"no regressions {basis}")
    lines += [f"  {why}: {name}" for name, why in sorted(c.missing.items())]
    lines += [f"  left out of {side}: {x.name}: {x.reason}" for side, left in c.left_out.items() for x in left]
    lines += [f"  only in B: {name}" for name in c.only_b]
    return lines


def failed(c: Comparison, allow_missing: bool = False) -> bool:
    return bool(c.regressions) or (bool(c.missing) and not allow_missing)


def measure_label(measure: str) -> str:
    return next(label for name, label, _ in MEASURES if name == measure)
