"""The report's full tables as plain rows of strings: one source for the HTML and the Markdown,
with the compact tables' (``sections``) and compare's names and formats: units in the header
(``P99 (ms)``, ``over-admission (x L)``), plain numbers in the cells."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from contract.summary import decided_label

Column = tuple[str, Callable[[dict[str, Any]], Any], str]

NA = "n/a"


def _get(field: str) -> Callable[[dict[str, Any]], Any]:
    return lambda row: row.get(field)


def _pct(field: str) -> Callable[[dict[str, Any]], Any]:
    return lambda row: None if row.get(field) is None else 100.0 * row[field]


SUMMARY: tuple[Column, ...] = (
    ("scenario", _get("scenario"), "{}"),
    ("algorithm", _get("algorithm"), "{}"),
    ("store", _get("store"), "{}"),
    ("repeat", _get("repeat"), "{}"),
    ("seed", _get("seed"), "{}"),
    ("decided from", decided_label, "{}"),
    ("requests", _get("requests"), "{:,}"),
    ("P99 (ms)", _get("latency_p99_intended_ms"), "{:,.1f}"),
    ("rejected (%)", _pct("rejected_rate"), "{:,.1f}"),
    ("legit rejected (%)", _pct("rejected_legit_rate"), "{:,.2f}"),
    ("abusive rejected (%)", _pct("rejected_abusive_rate"), "{:,.1f}"),
    ("target CPU (ms / 1k req)", _get("cpu_target_ms_per_1k"), "{:,.1f}"),
    ("marginal CPU (µs / req)", _get("cpu_target_us_per_req"), "{:,.1f}"),
    ("idle CPU (ms / s)", _get("cpu_target_idle_ms_per_s"), "{:,.1f}"),
    ("generator CPU (ms / 1k req)", _get("cpu_generator_ms_per_1k"), "{:,.1f}"),
    ("over-admission (x L)", _get("over_admission"), "{:,.2f}"),
    ("peak in flight (x bound)", _get("in_flight_ratio"), "{:,.2f}"),
    ("false admits", _get("false_admits"), "{:,}"),
    ("false rejects", _get("false_rejects"), "{:,}"),
    ("Jain (legit)", _get("legit_fairness_jain"), "{:.3f}"),
    ("goodput (/s)", _get("goodput_rps"), "{:,.1f}"),
    ("recovery (s)", _get("time_to_recover_s"), "{:,.1f}"),
    ("Retry-After truthful (%)", _pct("header_truthfulness"), "{:,.1f}"),
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
