"""The report's full tables as plain rows of strings: one source for the HTML and the Markdown,
with the compact tables' (``sections``) and compare's names and formats: units in the header
(``P99 (ms)``, ``over-admission (x L)``), plain numbers in the cells."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from contract.summary import decided_label

from . import promises
from .labels import FIGURES

Column = tuple[str, Callable[[dict[str, Any]], Any], str]

NA = "n/a"


def _get(field: str) -> Callable[[dict[str, Any]], Any]:
    return lambda row: row.get(field)


def _figure(field: str) -> Column:
    """A summary field as analysis.labels writes it: its header, its format, its scale."""
    name, fmt, scale = FIGURES[field]
    return name, (lambda row: None if row.get(field) is None else scale * row[field]), fmt


SUMMARY: tuple[Column, ...] = (
    ("scenario", _get("scenario"), "{}"),
    ("algorithm", _get("algorithm"), "{}"),
    ("store", _get("store"), "{}"),
    ("repeat", _get("repeat"), "{}"),
    ("seed", _get("seed"), "{}"),
    ("decided from", decided_label, "{}"),
    *(_figure(f) for f in ("requests", "latency_p99_intended_ms", "rejected_rate", "rejected_legit_rate",
                           "rejected_abusive_rate", "cpu_target_ms_per_1k", "cpu_target_us_per_req",
                           "cpu_target_idle_ms_per_s", "cpu_generator_ms_per_1k", "over_admission", "in_flight_ratio",
                           "false_admits", "false_rejects", "legit_fairness_jain", "goodput_rps", "time_to_recover_s",
                           "header_truthfulness")),
    ("limit fields kept", promises.text, "{}"),
)

LATENCY: tuple[Column, ...] = (
    ("scenario", _get("scenario"), "{}"),
    ("algorithm", _get("algorithm"), "{}"),
    ("store", _get("store"), "{}"),
    *((f"{p.upper()} (ms, {b})", _get(f"latency_{p}_{b}_ms"), "{:,.1f}")
      for b in ("intended", "sent") for p in ("p50", "p90", "p99", "p999")),
)


def render(columns: Sequence[Column], rows: Sequence[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    body = []
    for row in rows:
        cells = []
        for _, get, fmt in columns:
            value = get(row)
            cells.append(NA if value is None else fmt.format(value))
        body.append(cells)
    return [name for name, _, _ in columns], body


def has_latency(rows: Sequence[dict[str, Any]]) -> bool:
    return any(r.get("latency_p99_intended_ms") is not None for r in rows)
