"""The report's compact tables, as plain rows of strings: the comparison in the shape of the
source comparison (algorithm, P99, rejections, CPU overhead vs ``none``) and one table per scenario
with only the columns that scenario measures. Units live in the headers, so cells are numbers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .adaptive import GOODPUT_BOUND_S
from .answers import BASELINE, backoff, family
from .tables import NA

Row = dict[str, Any]


@dataclass(frozen=True)
class Col:
    header: str
    value: Callable[[Row], Any]
    fmt: str = "{:,.1f}"


def _field(name: str, scale: float | None = None) -> Callable[[Row], Any]:
    return lambda r: r.get(name) if r.get(name) is None or scale is None else scale * r[name]


ALGORITHM = Col("algorithm", lambda r: r["algorithm"], "{}")
STORE = Col("store", lambda r: r["store"], "{}")
P99 = Col("P99 (ms)", _field("latency_p99_intended_ms"))
REJECTED = Col("rejected (%)", _field("rejected_rate", 100.0))
CPU = Col("target CPU (ms / 1k req)", _field("cpu_target_ms_per_1k"))
SUSTAINED = Col("sustained (offered /s)", _field("ramp_sustained_rps"), "{:,.0f}")
STOPPED_BY = Col("then", lambda r: None if r.get("ramp_sustained_rps") is None else r.get("ramp_stopped_by") or "top of ramp", "{}")

DETAIL: tuple[Col, ...] = (
    Col("backoff", lambda r: backoff(r) if family(r["scenario"]) == "retry_storm" else None, "{}"),
    Col("requests", _field("requests"), "{:,}"),
    REJECTED,
    Col("legit rejected (%)", _field("rejected_legit_rate", 100.0), "{:,.2f}"),
    Col("abusive rejected (%)", _field("rejected_abusive_rate", 100.0)),
    Col("over-admission (x L)", _field("over_admission"), "{:,.2f}"),
    Col("false admits", _field("false_admits"), "{:,}"),
    Col("false rejects", _field("false_rejects"), "{:,}"),
    Col("Jain (legit)", _field("legit_fairness_jain"), "{:.3f}"),
    Col("P50 (ms)", _field("latency_p50_intended_ms")),
    P99,
    CPU,
    Col("goodput (/s)", _field("goodput_rps")),
    SUSTAINED,
    STOPPED_BY,
    Col("recovery (s)", _field("time_to_recover_s")),
    Col("calls", _field("calls"), "{:,}"),
    Col("calls per request", _field("amplification"), "{:,.2f}"),
    Col("completed", _field("completed_requests"), "{:,}"),
    Col("done in (s)", _field("time_to_done_s")),
    Col("Retry-After truthful (%)", _field("header_truthfulness", 100.0)),
)

COMPARED = ("unhealthy_downstream", "steady", "ramp")
"""The scenarios the source comparison measured: an unhealthy downstream, and plain throughput
(steady, or a ramp: then with the highest offered rate each run sustained)."""


def _cell(col: Col, row: Row) -> str:
    value = col.value(row)
    return NA if value is None else col.fmt.format(value)


def _table(cols: Sequence[Col], rows: Sequence[Row]) -> tuple[list[str], list[list[str]]]:
    return [c.header for c in cols], [[_cell(c, r) for c in cols] for r in rows]


def scenarios(rows: Sequence[Row]) -> dict[str, list[Row]]:
    """Rows by scenario, in the order the rows come."""
    out: dict[str, list[Row]] = {}
    for r in rows:
        out.setdefault(r["scenario"], []).append(r)
    return out


def detail(rows: Sequence[Row]) -> tuple[list[str], list[list[str]]]:
    """One scenario's table: algorithm (and store when they differ), then every measure it has."""
    cols = [ALGORITHM, *([STORE] if len({r["store"] for r in rows}) > 1 else [])]
    cols += [c for c in DETAIL if any(c.value(r) is not None for r in rows)]
    return _table(cols, rows)


def _overhead(baselines: dict[Any, Row]) -> Col:
    """CPU against the ``none`` run on the same store (a Redis run's baseline pays Redis's round trips too)."""

    def value(r: Row) -> float | None:
        cpu, base = r.get("cpu_target_ms_per_1k"), baselines.get(r["store"], {}).get("cpu_target_ms_per_1k")
        return None if cpu is None or not base else 100.0 * (cpu / base - 1.0)

    return Col(f"CPU vs {BASELINE} (%)", value, "{:+,.0f}")


def comparisons(rows: Sequence[Row]) -> dict[str, tuple[list[str], list[list[str]]]]:
    """Per scenario of COMPARED with live measures: algorithm, P99, rejections, CPU, overhead vs ``none``."""
    out = {}
    for scenario, rs in scenarios(rows).items():
        if family(scenario) not in COMPARED or all(r.get("latency_p99_intended_ms") is None and
                                                   r.get("cpu_target_ms_per_1k") is None for r in rs):
            continue
        baselines = {r["store"]: r for r in rs if r["algorithm"] == BASELINE}
        ramp = [SUSTAINED, STOPPED_BY] if any(r.get("ramp_sustained_rps") is not None for r in rs) else []
        cols = [ALGORITHM, *([STORE] if len({r["store"] for r in rs}) > 1 else []), *ramp, P99, REJECTED, CPU]
        out[scenario] = _table([*cols, *([_overhead(baselines)] if baselines else [])], rs)
    return out


HEAD_TO_HEAD: tuple[Col, ...] = (
    Col("rule", lambda r: r["adaptive_rule"], "{}"),
    Col(f"goodput in {GOODPUT_BOUND_S:g} s (/s)", _field("goodput_in_bound_rps")),
    P99,
    Col("legit rejected (%)", _field("rejected_legit_rate", 100.0)),
    Col("react (s)", _field("limit_react_s"), "{:,.2f}"),
    Col("recover (s)", _field("limit_recover_s"), "{:,.2f}"),
    Col("limit mean", _field("limit_mean")),
    Col("limit CoV", _field("limit_cov"), "{:.3f}"),
    CPU,
)


def head_to_head(rows: Sequence[Row]) -> dict[str, tuple[list[str], list[list[str]]]]:
    """The adaptive rules per downstream break (docs/scenarios.md, "Adaptive rules"): one table per
    break kind, one row per rule, for the runs whose limiter logged its limit."""
    kinds: dict[str, list[Row]] = {}
    for r in rows:
        if r.get("adaptive_rule") is not None:
            kinds.setdefault(r["break_kind"], []).append(r)
    return {kind: _table(HEAD_TO_HEAD, rs) for kind, rs in kinds.items()}
