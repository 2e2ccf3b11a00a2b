"""The adaptive head to head in the terminal, at the end of a campaign with adaptive rules (live
or virtual): one row per way the downstream broke and rule, the report's figures with the
report's headers and formats (analysis/labels.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from analysis.labels import HEAD_TO_HEAD, cell, header

from .term_table import Column, fit_table

NAMES = ("break", "rule")
SHORT = {"goodput_in_bound_rps": "good-\nput /s", "latency_p99_intended_ms": "P99\nms",
         "rejected_legit_rate": "legit\nrej. %", "refused_by_gateway": "bucket\nrefused",
         "limit_react_s": "react\ns", "limit_recover_s": "recover\ns", "limit_mean": "limit\nmean",
         "limit_cov": "limit\nCoV"}
"""The narrow layout's headers."""


def _cell(field: str) -> Callable[[dict[str, Any]], str]:
    def value(row: dict[str, Any]) -> str:
        v = row.get(field)
        return "-" if v is None else cell(field, v)

    return value


COLUMNS = tuple(Column(header(f), SHORT[f], _cell(f)) for f in HEAD_TO_HEAD)


def head_to_head_table(rows: Sequence[dict[str, Any]], out: Console, wide: bool = False) -> Table | None:
    """The head to head of the summary rows that have an adaptive rule, None without any."""
    named = [{**r, "break": r["break_kind"], "rule": r["adaptive_rule"]} for r in rows if r.get("adaptive_rule")]
    if not named:
        return None
    named.sort(key=lambda r: str(r["break"]))
    return fit_table("adaptive head to head", named, COLUMNS, out, wide=wide, names=NAMES, leaf="rule")
