"""summary.json and summary.csv: one row per run, the schema ``simulate --json`` prints, extended
with the analysis fields (a field that does not apply to a run is null).

Every row is built from its own run's files (a virtual run's ``wall_s`` and ``evicted_keys`` from its
run.json): nothing is read back from an earlier summary, which would key runs by name and blur repeats.
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
from .schema import DECIDED_BY_CLIENT, DECIDED_BY_MODEL, DECIDED_BY_TARGET, SUMMARY_CSV, SUMMARY_JSON, SYSTEM_SUITE


def _plain(value: Any) -> Any:
    """JSON-safe: numpy scalars as Python numbers, NaN as null."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def with_system(row: dict[str, Any]) -> dict[str, Any]:
    """Every row names who limited (``system``, right after ``algorithm``): a row that does not
    say is the suite's own (simulations, earlier folders); a peer's row says its name."""
    if "system" in row:
        return row
    out: dict[str, Any] = {}
    for k, v in row.items():
        out[k] = v
        if k == "algorithm":
            out["system"] = SYSTEM_SUITE
    return out if "system" in out else {**out, "system": SYSTEM_SUITE}


def decided_label(row: dict[str, Any]) -> str:
    """How a row's metrics were decided, as the report labels them: ``target`` (the limiter's own
    records), or ``client-side ±<P99 round trip> ms`` for a url peer's (every metric of the row
    is inferred from the client log: ``decided_from`` and ``decision_uncertainty_ms`` columns);
    ``model`` for a peer's virtual twin."""
    if row.get("decided_from") == DECIDED_BY_MODEL:
        return DECIDED_BY_MODEL
    if row.get("decided_from") != DECIDED_BY_CLIENT:
        return DECIDED_BY_TARGET
    ms = row.get("decision_uncertainty_ms")
    return "client-side" + ("" if ms is None else f" ±{ms:.1f} ms")


def summary_json(rows: Sequence[dict[str, Any]]) -> str:
    """The one writer of summary.json (and of ``simulate --json``): numpy scalars as numbers, NaN as null."""
    runs = [{k: _plain(v) for k, v in with_system(row).items()} for row in rows]
    return json.dumps({"runs": runs}, indent=2, default=_scalar) + "\n"


def _scalar(value: Any) -> Any:
    if hasattr(value, "item"):  # numpy scalars deeper than a row's own fields
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def summary_csv(rows: Sequence[dict[str, Any]]) -> str:
    rows = [with_system(row) for row in rows]
    fields: list[str] = []
    for row in rows:
        fields.extend(k for k in row if k not in fields)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: json.dumps(v) if isinstance(v, dict) else v for k, v in row.items()})
    return buf.getvalue()


def write_rows(root: Path, rows: Sequence[dict[str, Any]]) -> None:
    """Both files, atomically, exactly these rows."""
    write_text(root / SUMMARY_JSON, summary_json(rows))
    write_text(root / SUMMARY_CSV, summary_csv(rows))


def write_summary(root: Path, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The analysis' rows, written as they are (numpy scalars as numbers, NaN as null); returns them so."""
    plain = [{k: _plain(v) for k, v in row.items()} for row in rows]
    write_rows(root, plain)
    return plain
