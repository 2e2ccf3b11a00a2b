"""The results folder the runners write: ``runs/<scenario>__<algorithm>__<store>/`` and the summary
files, every file written atomically (temp file + rename) so a reader never sees half a file."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from .atomic import atomic_write
from .schema import RUNS_DIR
from .summary import write_rows


def utc_stamp(now: datetime | None = None) -> str:
    return (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")


def write_parquet(path: Path, table: pa.Table) -> None:
    atomic_write(path, lambda tmp: pq.write_table(table, tmp))


class ResultsFolder:
    """``<root>/runs/<scenario>__<algorithm>__<store>/...`` plus the summary files."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def run_dir(self, name: str) -> Path:
        return self.root / RUNS_DIR / name

    def write_summary(self, rows: Sequence[dict[str, Any]]) -> None:
        write_rows(self.root, rows)
