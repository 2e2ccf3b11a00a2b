"""The decision log on disk, for its writer (the target) and every reader.

A finished log is one Parquet file at its path. While a target runs, and after it was killed,
the log is the parts it has flushed, one complete Parquet file each, in a folder beside the
path (``.NAME.parts/part-000001.parquet`` ...): each part is written under a temporary name and
renamed, so a kill loses at most the rows of the flush it interrupted. ``finish`` turns parts
into the file (the target on shutdown, the runner after a kill); ``read_table`` and
``read_schema`` read either, so a log is usable whichever state it was left in.

A node of several processes (``processes: N``) writes one log per process beside the path
(``NAME.process-0.parquet`` ..., ``process_path``), each finished or in parts as above;
``join_processes`` makes them the node's one file at the path, in time order.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from .schema import DECISION_SCHEMA

PART_GLOB = "part-*.parquet"


def parts_dir(path: Path) -> Path:
    return path.with_name(f".{path.name}.parts")


def write_part(path: Path, number: int, table: pa.Table) -> None:
    """One flushed part, complete or absent: written aside, then renamed into the folder."""
    folder = parts_dir(path)
    tmp = folder / f".part-{number:06d}.tmp"
    pq.write_table(table, tmp)
    os.replace(tmp, folder / f"part-{number:06d}.parquet")


def parts(path: Path) -> list[Path]:
    """The flushed parts in flush order (empty when there are none)."""
    folder = parts_dir(path)
    return sorted(folder.glob(PART_GLOB)) if folder.is_dir() else []


def exists(path: Path) -> bool:
    return path.is_file() or parts_dir(path).is_dir()


def remove(path: Path) -> None:
    """No log at ``path`` any more, finished or in parts (a target starts with this, so an
    earlier run's log is never taken for its own)."""
    path.unlink(missing_ok=True)
    shutil.rmtree(parts_dir(path), ignore_errors=True)


def start(path: Path) -> None:
    remove(path)
    parts_dir(path).mkdir(parents=True)


def finish(path: Path) -> None:
    """The parts as one file at ``path`` (atomically: a reader sees the parts or the file)."""
    found = parts(path)  # read part by part: pq.read_table would import pyarrow.dataset into the target
    _write(path, pa.concat_tables([pq.ParquetFile(p).read() for p in found]) if found else DECISION_SCHEMA.empty_table())
    shutil.rmtree(parts_dir(path), ignore_errors=True)


def _write(path: Path, table: pa.Table) -> None:
    tmp = path.with_name(f".{path.name}.partial")
    pq.write_table(table, tmp)
    os.replace(tmp, path)


def join(sources: list[Path], path: Path) -> None:
    """Finished logs as one file at ``path``, sorted by time, atomically; the sources are removed
    (a node's processes, a run's nodes)."""
    _write(path, pa.concat_tables([pq.ParquetFile(p).read() for p in sources]).sort_by("t"))
    for p in sources:
        p.unlink()


def process_path(path: Path, index: int) -> Path:
    """Where process ``index`` of a multi-process node writes its own log."""
    return path.with_name(f"{path.stem}.process-{index}{path.suffix}")


def process_paths(path: Path) -> list[Path]:
    """The per-process logs of ``path`` on disk (finished or in parts), in process order."""
    pattern = f"{path.stem}.process-*{path.suffix}"
    found = {p for p in path.parent.glob(pattern)} | {p.with_name(p.name[1:-len(".parts")])
                                                       for p in path.parent.glob(f".{pattern}.parts")}
    return sorted(found, key=lambda p: int(p.stem.rsplit("-", 1)[1]))


def remove_processes(path: Path) -> None:
    """No per-process log of ``path`` any more (a node starts with this, like ``start``)."""
    for p in process_paths(path):
        remove(p)


def join_processes(path: Path) -> bool:
    """The per-process logs (finishing those left in parts by a kill) as one file at ``path``,
    sorted by time, atomically; the per-process logs are removed. False when there were none."""
    found = process_paths(path)
    if not found:
        return False
    for p in found:
        if not p.is_file():
            finish(p)
    join(found, path)
    return True


def _source(path: Path) -> Any:
    if path.is_file() or not parts_dir(path).is_dir():
        return path  # a missing log raises FileNotFoundError for its own path
    return parts(path) or DECISION_SCHEMA.empty_table()


def read_table(path: Path, **kwargs: Any) -> pa.Table:
    """``pq.read_table`` over the file, or the parts of a log whose writer was killed."""
    source = _source(path)
    if isinstance(source, pa.Table):
        return source.select(kwargs["columns"]) if kwargs.get("columns") else source
    return pq.read_table(source, **kwargs)


def read_schema(path: Path) -> pa.Schema:
    source = _source(path)
    if isinstance(source, pa.Table):
        return source.schema
    return pq.read_schema(source[0] if isinstance(source, list) else source)
