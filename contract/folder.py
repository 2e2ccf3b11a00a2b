"""The results folder: atomic writes (temp file + rename) so a reader never sees half a file.
The writing helpers are the analysis package's (the harness may import analysis, not the reverse)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from .atomic import atomic_write, write_text
from .schema import RUNS_DIR, SUMMARY_CSV, SUMMARY_JSON
from .summary import summary_csv


def utc_stamp(now: datetime | None = None) -> str:
    return (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")


def write_parquet(path: Path, table: pa.Table) -> None:
    atomic_write(path, lambda tmp: pq.write_table(table, tmp))


def summary_json(rows: Sequence[dict[str, Any]]) -> str:
    return json.dumps({"runs": list(rows)}, indent=2, default=_jsonable) + "\n"


def _jsonable(value: Any) -> Any:
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


class ResultsFolder:
    """``<root>/runs/<scenario>__<algorithm>__<store>/...`` plus the summary files."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def run_dir(self, name: str) -> Path:
        return self.root / RUNS_DIR / name

    def write_summary(self, rows: Sequence[dict[str, Any]]) -> None:
        write_text(self.root / SUMMARY_JSON, summary_json(rows))
        write_text(self.root / SUMMARY_CSV, summary_csv(rows))
