"""The results folder: atomic writes (temp file + rename) so a reader never sees half a file."""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from analysis.schema import RUNS_DIR, SUMMARY_CSV, SUMMARY_JSON


def utc_stamp(now: datetime | None = None) -> str:
    return (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")


def _atomic(path: Path, write: Callable[[Path], None]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text(path: Path, text: str) -> None:
    _atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_parquet(path: Path, table: pa.Table) -> None:
    _atomic(path, lambda tmp: pq.write_table(table, tmp))


def summary_json(rows: Sequence[dict[str, Any]]) -> str:
    return json.dumps({"runs": list(rows)}, indent=2, default=_jsonable) + "\n"


def _jsonable(value: Any) -> Any:
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


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


class ResultsFolder:
    """``<root>/runs/<scenario>__<algorithm>__<store>/...`` plus the summary files."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def run_dir(self, name: str) -> Path:
        return self.root / RUNS_DIR / name

    def write_summary(self, rows: Sequence[dict[str, Any]]) -> None:
        write_text(self.root / SUMMARY_JSON, summary_json(rows))
        write_text(self.root / SUMMARY_CSV, summary_csv(rows))
