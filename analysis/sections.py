"""The report's compact tables, as plain rows of strings: the comparison in the shape of the
source comparison (algorithm, P99, rejections, CPU, the marginal CPU's overhead vs ``none``) and
one table per scenario with only the columns that scenario measures. Units live in the headers
(analysis.labels names and formats every field), so cells are numbers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from . import labels
from .answers import BASELINE, backoff, family
from .cpu import CLOCK_TICK_S, RESOLVED_SHARE
from .labels import FIGURES, header, num, row_policy
from .spread import apart, exact, with_spread
from .tables import NA

Row = dict[str, Any]
WITHIN_NOISE = "within noise"


@dataclass(frozen=True)
class Col:
    header: str
    value: Callable[[Row], Any]
    fmt: str = "{:,.1f}"
    field: str | None = None
    """The summary field shown: its spread, when the run was repeated, follows the figure."""
    scale: float = 1.0


def _field(name: str, scale: float | None = None) -> Callable[[Row], Any]:
    return lambda r: r.get(name) if r.get(name) is None or scale is None else scale * r[name]


def _measure(header: str, name: str, fmt: str = "{:,.1f}", scale: float = 1.0) -> Col:
    return Col(header, _field(name, scale), fmt, name, scale)


def _figure(name: str) -> Col:
    """A summary field with the header, format and scale analysis.labels gives it."""
    title, fmt, scale = FIGURES[name]
    return _measure(title, name, fmt, scale)


ALGORITHM = Col("algorithm", lambda r: r["algorithm"], "{}")
STORE = Col("store", lambda r: r["store"], "{}")
P99 = _figure("latency_p99_intended_ms")
REJECTED = _figure("rejected_rate")
CPU = _figure("cpu_target_ms_per_1k")
BELOW_RESOLUTION = "below resolution"


def _marginal(r: Row) -> float | str | None:
    """The marginal CPU per request, or why a run with CPU samples has none (analysis/cpu.py)."""
    value = r.get("cpu_target_us_per_req")
    return BELOW_RESOLUTION if value is None and r.get("cpu_target_ms_per_1k") is not None else value


MARGINAL = Col(header("cpu_target_us_per_req"), _marginal, FIGURES["cpu_target_us_per_req"][1], "cpu_target_us_per_req")
SUSTAINED = _measure("sustained (offered /s)", "ramp_sustained_rps", "{:,.0f}")
STOPPED_BY = Col("then", lambda r: None if r.get("ramp_sustained_rps") is None else r.get("ramp_stopped_by") or "top of ramp", "{}")

DETAIL: tuple[Col, ...] = (
    Col("backoff", lambda r: backoff(r) if family(r["scenario"]) == "retry_storm" else None, "{}"),
    _figure("requests"),
    REJECTED,
    _figure("rejected_legit_rate"),
    _figure("rejected_abusive_rate"),
    _figure("over_admission"),
    _figure("in_flight_ratio"),
    _figure("false_admits"),
    _figure("false_rejects"),
    _figure("legit_fairness_jain"),
    _figure("latency_p50_intended_ms"),
    P99,
    CPU,
    MARGINAL,
    _figure("goodput_rps"),
    SUSTAINED,
    STOPPED_BY,
    _figure("time_to_recover_s"),
    _measure("calls", "calls", "{:,.0f}"),
    _measure("calls per request", "amplification", "{:,.2f}"),
    _measure("completed", "completed_requests", "{:,.0f}"),
    _measure("done in (s)", "time_to_done_s"),
    _figure("header_truthfulness"),
)

COMPARED = ("unhealthy_downstream", "steady", "ramp")
"""The scenarios the source comparison measured: an unhealthy downstream, and plain throughput
(steady, or a ramp: then with the highest offered rate each run sustained)."""


def _cell(col: Col, row: Row) -> str:
    value = col.value(row)
    if value is None:
        return NA
    if isinstance(value, str) and col.fmt != "{}":  # a figure's reason for being absent
        return value
    text = col.fmt.format(value)
    return text if col.field is None else with_spread(row, col.field, text, lambda v: col.fmt.format(col.scale * v))


def _table(cols: Sequence[Col], rows: Sequence[Row]) -> tuple[list[str], list[list[str]]]:
    return [c.header for c in cols], [[_cell(c, r) for c in cols] for r in rows]


def scenarios(rows: Sequence[Row]) -> dict[str, list[Row]]:
    """Rows by scenario, in the order the rows come."""
    out: dict[str, list[Row]] = {}
    for r in rows:
        out.setdefault(r["scenario"], []).append(r)
    return out


def heading(scenario: str, rows: Sequence[Row]) -> str:
    """A table's heading: its scenario and the policy its runs share."""
    return f"{scenario} · {row_policy(rows[0])}"


def detail(rows: Sequence[Row]) -> tuple[list[str], list[list[str]]]:
    """One scenario's table: algorithm (and store when they differ), then every measure it has."""
    cols = [ALGORITHM, *([STORE] if len({r["store"] for r in rows}) > 1 else [])]
    cols += [c for c in DETAIL if any(c.value(r) is not None for r in rows)]
    return _table(cols, rows)


def _overhead(baselines: dict[Any, Row]) -> Col:
    """Marginal CPU against the ``none`` run on the same store (a Redis run's baseline pays
    Redis's round trips too), only where the two intervals are apart: the whole-process figure
    measures the idle process, and a difference inside the noise ranks nothing."""
    field = "cpu_target_us_per_req"

    def value(r: Row) -> float | str | None:
        base = baselines.get(r["store"])
        if r.get(field) is None or base is None or base is r or not base.get(field):
            return None
        apart_ = apart(r, base, field) or exact(r, base)  # virtual time: no noise to be within
        return 100.0 * (r[field] / base[field] - 1.0) if apart_ else WITHIN_NOISE

    return Col(f"marginal CPU vs {BASELINE} (%)", value, "{:+,.0f}")


def cpu_note(rows: Sequence[Row]) -> str:
    """What the CPU columns measure and what resolves them, from the rows' own sampler facts."""
    sampled = [r for r in rows if r.get("cpu_sample_s") is not None]
    if not sampled:
        return ""
    every = sorted({r["cpu_sample_s"] for r in sampled})
    res = sorted(r["cpu_target_resolution_ms_per_1k"] for r in sampled if r.get("cpu_target_resolution_ms_per_1k") is not None)
    span = "" if not res else f"; over these runs' requests one tick is {num(res[0])}" + \
        (f" to {num(res[-1])}" if res[-1] != res[0] else "") + " ms per 1,000 requests"
    hidden = sum(r.get("cpu_target_us_per_req") is None for r in sampled)
    return (f"Target CPU: the whole process per 1,000 requests, idle time included (CPU sampled every "
            f"{num(every[0])}{'' if len(every) == 1 else f'-{num(every[-1])}'} s per process, in {CLOCK_TICK_S * 1e3:g} ms "
            f"clock ticks{span}), and the marginal CPU per request: the slope of CPU against the requests decided, "
            f"over the sampler's bins, with its 95% interval; {BELOW_RESOLUTION} where that interval is wider than "
            f"{RESOLVED_SHARE:.0%} of the figure ({hidden} of {len(sampled)} runs). Only the marginal figure compares "
            f"limiters, and only where the intervals are apart.")


def comparisons(rows: Sequence[Row]) -> dict[str, tuple[list[str], list[list[str]]]]:
    """Per scenario of COMPARED with live measures: algorithm, P99, rejections, CPU, overhead vs ``none``."""
    out = {}
    for scenario, rs in scenarios(rows).items():
        if family(scenario) not in COMPARED or all(r.get("latency_p99_intended_ms") is None and
                                                   r.get("cpu_target_ms_per_1k") is None for r in rs):
            continue
        baselines = {r["store"]: r for r in rs if r["algorithm"] == BASELINE}
        ramp = [SUSTAINED, STOPPED_BY] if any(r.get("ramp_sustained_rps") is not None for r in rs) else []
        cols = [ALGORITHM, *([STORE] if len({r["store"] for r in rs}) > 1 else []), *ramp, P99, REJECTED, CPU, MARGINAL]
        out[scenario] = _table([*cols, *([_overhead(baselines)] if baselines else [])], rs)
    return out


HEAD_TO_HEAD: tuple[Col, ...] = (
    Col("rule", lambda r: r["adaptive_rule"], "{}"),
    *(_figure(name) for name in labels.HEAD_TO_HEAD),
    MARGINAL,
)


def head_to_head(rows: Sequence[Row]) -> dict[str, tuple[list[str], list[list[str]]]]:
    """The adaptive rules per downstream break (docs/scenarios.md, "Adaptive rules"): one table per
    break kind, one row per rule, for the runs whose limiter logged its limit."""
    kinds: dict[str, list[Row]] = {}
    for r in rows:
        if r.get("adaptive_rule") is not None:
            kinds.setdefault(r["break_kind"], []).append(r)
    return {kind: _table(HEAD_TO_HEAD, rs) for kind, rs in kinds.items()}
