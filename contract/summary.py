"""summary.json and summary.csv: one row per run, the schema ``simulate --json`` prints, extended
with the analysis fields (a field that does not apply to a run is null).

Fields the analysis cannot rebuild from raw files (the simulator's ``evicted_keys`` and
``wall_s``) are carried over from the summary already in the folder.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .atomic import write_text
from .schema import SUMMARY_CSV, SUMMARY_JSON

RUN_ID = ("scenario", "algorithm", "store")


def _plain(value: Any) -> Any:
    """JSON-safe: numpy scalars as Python numbers, NaN as null."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def _previous(root: Path) -> dict[tuple, dict[str, Any]]:
    try:
        runs = json.loads((root / SUMMARY_JSON).read_text(encoding="utf-8")).get("runs", [])
        return {tuple(r.get(k) for k in RUN_ID): r for r in runs if isinstance(r, dict)}
    except (OSError, ValueError, AttributeError):
        return {}


def merged_rows(root: Path, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    old = _previous(root)
    out = []
    for row in rows:
        extra = {k: v for k, v in old.get(tuple(row.get(k) for k in RUN_ID), {}).items() if k not in row}
        out.append({k: _plain(v) for k, v in {**row, **extra}.items()})
    return out


def summary_json(rows: Sequence[dict[str, Any]]) -> str:
    return json.dumps({"runs": list(rows)}, indent=2) + "\n"


def summary_csv(rows: Sequence[dict[str, Any]]) -> str:
    fields: list[str] = []
    for row in rows:
        fields.extend(k for k in row if k not in fields)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: json.dumps(v) if isinstance(v, dict) else v for k, v in row.items()})
    return buf.getvalue()


def write_summary(root: Path, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Write both files atomically; returns the rows as written."""
    merged = merged_rows(root, rows)
    write_text(root / SUMMARY_JSON, summary_json(merged))
    write_text(root / SUMMARY_CSV, summary_csv(merged))
    return merged
