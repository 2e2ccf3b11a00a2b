"""What `run`, `report` and `simulate --campaign` print at the end, k6-length: the answers first
(the report's opening sentences, algorithm names in their chart colours), then one table of the
runs that fits the terminal, naming the columns it left out and how to see them (``--wide``, or
report.html), the adaptive head to head when rules ran, and where the report is."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.table import Table

from analysis import promises
from analysis.analysed import Report
from analysis.palette import rich_markup
from analysis.spread import with_spread
from contract.schema import REPORT_HTML

from .head_to_head import head_to_head_table
from .term_table import Column, fit_columns, left_out


def show_summary(report: Report, out: Console, wide: bool = False, warnings: bool = True) -> None:
    """``warnings``: False where they went to stderr already (`report`)."""
    for warning in report.warnings() if warnings else ():
        out.print(f"[yellow]warning:[/yellow] {warning}", highlight=False)
    for answer in report.answers():
        out.print(rich_markup(answer.line()), highlight=False)
    table, hidden = summary_table(report.groups, out, wide)
    out.print(table)
    if hidden:
        out.print(left_out(hidden, out.width, f"run_bench.py report {report.root} --wide, or {report.root / REPORT_HTML}"),
                  highlight=False, markup=False)
    h2h = head_to_head_table(report.groups, out, wide)
    if h2h is not None:
        out.print(h2h)
    out.print(f"report: {report.root / REPORT_HTML}", highlight=False)


def _title(rows: list[dict[str, Any]]) -> str:
    return "virtual campaign summary" if rows and all(r.get("kind") == "virtual" for r in rows) else "live campaign summary"


def _cell(key: str) -> Callable[[dict[str, Any]], str]:
    """The figure, with its spread (low-high) when the run was repeated."""
    def cell(row: dict[str, Any]) -> str:
        value = row.get(key)
        if value is None or isinstance(value, bool):
            return _fmt(value)
        return with_spread(row, key, _fmt(value), (lambda v: f"{v:,.0f}") if isinstance(value, int) else _fmt)

    return cell


BELOW = "< res."
"""The marginal CPU per request where the run cannot resolve it (docs/analysis.md, "CPU")."""
LIVE_COLUMNS = (
    Column("requests", "req.", _cell("requests")),
    Column("rejected", "rej.", _cell("rejected")),
    Column("legit rej.", "legit\nrej.", _cell("rejected_legit")),
    Column("over-adm.", "over-\nadm.", _cell("over_admission")),
    Column("in flight", "in\nflight", _cell("in_flight_ratio")),
    Column("P99 ms", "P99\nms", _cell("latency_p99_intended_ms")),
    Column("target CPU ms/1k", "target\nCPU ms\n/1k req.", _cell("cpu_target_ms_per_1k")),
    Column("µs/req", "marg.\nCPU µs\n/req", lambda row: BELOW if row.get("cpu_target_us_per_req") is None
           and row.get("cpu_target_ms_per_1k") is not None else _cell("cpu_target_us_per_req")(row)),
    Column("gen.-bound", "gen.\nbound", _cell("generator_bound")),
)


RAMP_COLUMN = Column("sustained /s", "sust.\n/s",
                     lambda row: "-" if row.get("ramp_sustained_rps") is None else f"{row['ramp_sustained_rps']:,.0f}")
"""Only when a ramp ran: the highest offered rate with P99 under its bound and nothing late or failed."""
FIELDS_COLUMN = Column("fields kept", "fields\nkept", lambda row: promises.text(row, short=True) or "-")
"""Only when some answer carried limit fields: the promises kept of those checked, Retry-After, remaining
and reset (analysis.promises.text),
after the limit's own columns (before latency and CPU: a narrow terminal crops the last ones)."""
FIELDS_AT = 5


def summary_table(rows: list[dict[str, Any]], out: Console, wide: bool = False) -> tuple[Table, list[Column]]:
    """The runs' table as wide as ``out`` holds, and the columns it left out (analysis.labels order:
    the limit's own figures first, latency and CPU after, a ramp's rate last)."""
    ramp = any(r.get("ramp_sustained_rps") is not None for r in rows)
    fields = [FIELDS_COLUMN] if any(r.get("limit_fields_form") for r in rows) else []
    columns = (*LIVE_COLUMNS[:FIELDS_AT], *fields, *LIVE_COLUMNS[FIELDS_AT:], *([RAMP_COLUMN] if ramp else []))
    said = [c for c in columns if any(c.cell(r) != "-" for r in rows)]  # a column of dashes says nothing
    return fit_columns(_title(rows), rows, said, out, wide=wide)


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)
