"""The results folder the runners write: ``runs/<scenario>__<algorithm>__<store>/`` and the summary
files, every file written atomically (temp file + rename) so a reader never sees half a file, and
a simulated run's folder and a simulation's whole folder written under a temporary name
(``.<name>.partial``) and renamed when complete, so neither is ever seen half-written: what a
kill leaves is a ``.partial`` folder, which the analysis names and never counts."""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from .atomic import atomic_write
from .schema import RUNS_DIR
from .summary import write_rows

PARTIAL = ".partial"


def partial_path(path: Path) -> Path:
    """Where ``path`` is written until it is complete: ``.<name>.partial`` beside it."""
    return path.with_name(f".{path.name}{PARTIAL}")


def is_partial(path: Path) -> bool:
    return path.name.startswith(".") and path.name.endswith(PARTIAL)


def final_name(path: Path) -> str:
    """The name a partial folder will have when complete."""
    return path.name[1:-len(PARTIAL)] if is_partial(path) else path.name


def finish(path: Path) -> None:
    """``path``'s partial folder becomes ``path`` (an empty folder there is replaced)."""
    os.replace(partial_path(path), path)


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

    def partial_run_dir(self, name: str) -> Path:
        """Where a run is written until it is complete (``finish(run_dir(name))`` then)."""
        return partial_path(self.run_dir(name))

    def write_summary(self, rows: Sequence[dict[str, Any]]) -> None:
        write_rows(self.root, rows)
