"""Whether one headline figure of a run got worse from A to B beyond its noise: each figure with
its own noise model (analysis.noise) and the smallest change a user cares about (its floor).

A change is judged *exact* where both sides are virtual runs of the same seeds: the simulator is
deterministic, so any difference is the candidate's; and where B's over-admission passes the bound
its policy sets (analysis.theory): no traffic explains that. Otherwise counts are judged by their
binomial or Poisson model, every figure with two or more runs a side by its repeats' spread
(virtual runs: the spread across seeds), CPU with one run a side by the intervals each run
measured itself, and latency or goodput with one run a side, which nothing measures the noise of,
only against ``--threshold`` (the verdict says which model judged each).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from contract.run_info import RunPolicy

from . import noise
from .theory import over_admission_bound

Row = dict[str, Any]
EXACT, THRESHOLD_ONLY = "exact: virtual, same seeds", "one run a side: only the threshold"


@dataclass(frozen=True)
class Side:
    """One side's group of a run: its row (medians and spread) and the rows of its repeats."""

    row: Row
    members: list[Row]

    def values(self, field: str) -> list[float] | None:
        values = [m.get(field) for m in self.members]
        return None if any(v is None for v in values) else [float(v) for v in values]

    def virtual(self) -> bool:
        return all(m.get("kind") == "virtual" for m in self.members)

    def seeds(self) -> list[Any]:
        return sorted((m.get("seed") for m in self.members), key=str)


@dataclass(frozen=True)
class Limits:
    """The floors: ``ratio`` for P99 (and goodput when nothing measures its noise), ``tolerance``
    in the figure's units for over-admission and legit rejections, a share of A's for CPU and goodput."""

    ratio: float
    tolerance: float


@dataclass(frozen=True)
class Judgement:
    measure: str
    worse: bool
    """Past the floor (the threshold or the tolerance)."""
    model: str
    p: float | None
    """None: exact, or judged only against the threshold (no noise model to test)."""

    def flagged(self, alpha: float) -> bool:
        return self.worse and (self.p is None or self.p < alpha)


def _exact(a: Side, b: Side) -> bool:
    return a.virtual() and b.virtual() and a.seeds() == b.seeds() and None not in a.seeds()


def _several(a: Side, b: Side) -> bool:
    return min(len(a.members), len(b.members)) >= 2


def _judged(measure: str, sign: float, a: Side, b: Side, single: Callable[[], tuple[str, float | None]],
            unit: float = 0.0) -> tuple[str, float | None]:
    """The model and p-value of a figure where worse is ``sign`` x up: exact, repeats (a figure
    counted in ``unit``s) or ``single``."""
    if _exact(a, b):
        return EXACT, None
    va, vb = a.values(measure), b.values(measure)
    if _several(a, b) and va and vb:
        return ("spread across seeds" if a.virtual() and b.virtual() else "repeats"), \
            noise.repeats_rise([sign * v for v in va], [sign * v for v in vb], unit)
    return single()


def policy_bound(row: Row) -> float | None:
    """The most its policy lets the run's algorithm admit in any window (x L, analysis.theory),
    from the policy alone: what the limiter claims, whatever parameters it was given."""
    return over_admission_bound(row["algorithm"], RunPolicy(row["limit"], row["window_s"], row["burst"] or row["limit"]), {})


def over_admission(a: Side, b: Side, limits: Limits) -> Judgement | None:
    """Over-admission (x L) rose by more than the tolerance. Past its policy's bound it is exact:
    no traffic makes a limiter true to its policy admit more. Otherwise, one run a side: the most
    admitted in a window (x L, in cost units) as a Poisson count. ``none`` has no limit: not judged."""
    va, vb = a.row.get("over_admission"), b.row.get("over_admission")
    if va is None or vb is None or a.row.get("algorithm") == "none":
        return None
    bound = policy_bound(b.row)
    if bound is not None and vb > bound + limits.tolerance and vb > va + limits.tolerance:
        return Judgement("over_admission", True, f"past its policy's bound of {bound:.2f}x: exact", None)
    model, p = _judged("over_admission", 1.0, a, b, lambda: (
        "Poisson count", noise.count_rise(va * a.row["limit"], vb * b.row["limit"])), unit=1.0 / a.row["limit"])
    return Judgement("over_admission", vb > va + limits.tolerance, model, p)


def legit_rejections(a: Side, b: Side, limits: Limits) -> Judgement | None:
    """The legitimate rejection rate rose by more than the tolerance; binomial, each legitimate
    request a trial (the repeats' counts pooled)."""
    va, vb = a.row.get("rejected_legit_rate"), b.row.get("rejected_legit_rate")
    if va is None or vb is None:
        return None
    worse = vb > va + limits.tolerance
    if _exact(a, b):
        return Judgement("rejected_legit_rate", worse, EXACT, None)
    ka, na = (sum(int(m["rejected_legit"]) for m in a.members), sum(int(m["legit_requests"]) for m in a.members))
    kb, nb = (sum(int(m["rejected_legit"]) for m in b.members), sum(int(m["legit_requests"]) for m in b.members))
    return Judgement("rejected_legit_rate", worse, "binomial", noise.proportion_rise(ka, na, kb, nb))


def p99(a: Side, b: Side, limits: Limits) -> Judgement | None:
    """P99 from the intended send grew to ``ratio`` x A's or more."""
    va, vb = a.row.get("latency_p99_intended_ms"), b.row.get("latency_p99_intended_ms")
    if va is None or vb is None or va <= 0:
        return None
    model, p = _judged("latency_p99_intended_ms", 1.0, a, b, lambda: (THRESHOLD_ONLY, None))
    return Judgement("latency_p99_intended_ms", vb >= limits.ratio * va, model, p)


def goodput(a: Side, b: Side, limits: Limits) -> Judgement | None:
    """Goodput fell by more than the tolerance (a share of A's); by ``ratio`` or more where one
    run a side has no noise model."""
    va, vb = a.row.get("goodput_rps"), b.row.get("goodput_rps")
    if va is None or vb is None or va <= 0:
        return None
    model, p = _judged("goodput_rps", -1.0, a, b, lambda: (THRESHOLD_ONLY, None))
    floor = va / limits.ratio if model == THRESHOLD_ONLY else va * (1.0 - limits.tolerance)
    return Judgement("goodput_rps", vb < floor, model, p)


def cpu(a: Side, b: Side, limits: Limits) -> Judgement | None:
    """The target's marginal CPU per request rose by more than the tolerance (a share of A's);
    one run a side: by the 95% intervals each run measured. A run below resolution: not judged."""
    field = "cpu_target_us_per_req"
    va, vb = a.row.get(field), b.row.get(field)
    if va is None or vb is None or va <= 0:
        return None
    low, high = f"{field}_low", f"{field}_high"
    model, p = _judged(field, 1.0, a, b, lambda: ("own 95% intervals", noise.intervals_rise(
        va, (a.row[low], a.row[high]), vb, (b.row[low], b.row[high]))))
    return Judgement(field, vb > va * (1.0 + limits.tolerance), model, p)


GATED: tuple[Callable[[Side, Side, Limits], Judgement | None], ...] = (over_admission, legit_rejections, p99, goodput, cpu)
"""Every headline figure the gate judges, in the order the verdict names them."""


def judge(a: Side, b: Side, limits: Limits) -> list[Judgement]:
    return [j for gate in GATED if (j := gate(a, b, limits)) is not None]
