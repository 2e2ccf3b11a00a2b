"""Replay a recorded trace: CSV or Parquet with columns ``t`` (seconds) and ``key``, optional
``cost`` (default 1), ``client_class`` (default legit) and ``route`` (default ``GET /api/items``,
else a route of the catalogue, ``contract.routes``). For example built from a
production access log: one row per request."""

from __future__ import annotations

import re
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.csv as csv
import pyarrow.parquet as pq

from contract.routes import BY_MODEL_NAME, ITEMS

from .access_log.stream import DEFAULT_BOUNDS, LineStream, ReadBounds
from .base import LEGIT, Arrivals, ScenarioError, TrafficModel

if TYPE_CHECKING:  # imported where a trace is read: the Locust processes import this module, never read one
    import pandas as pd

CLASSES = ("legit", "abusive")


def trace_run_name(path: str | Path, scenarios: Collection[str] = ()) -> str:
    """The scenario name of a run that replays ``path``: the file's name before its first dot
    (``access.log.gz``: ``access``), in the characters a run folder's name allows (``__``
    separates its parts). A name that starts as one of ``scenarios`` does (``ramp-test``) is
    prefixed ``trace-``: the analysis reads a scenario's family from its name."""
    stem = re.sub(r"_{2,}", "_", re.sub(r"[^A-Za-z0-9_.-]+", "-", Path(path).name.split(".")[0])).strip("-_") or "trace"
    return f"trace-{stem}" if any(stem.startswith(name) for name in scenarios) else stem


REPLAY_BYTES = 1 << 30
"""The most a trace's replay may take by default (``simulate --replay-memory``), the process, its
imports and its forked analysis workers summed (PSS): an input file of any size is replayed in
1 GiB or refused before it is held, unless the user gives it more (#41)."""
BASE_BYTES = 400 << 20
"""The replay's tree before its first request: the imports, the reader, the analysis workers."""
REQUEST_BYTES = 420
"""A replayed request at the tree's peak: its arrival, the store's decision, the ideal
reference's, the decision log's part, the analysis's columns in a worker (the parent's freed
memory given back before the workers fork: ``analysis.pool``). Measured on 2026-12-07 (the
process and its workers, PSS summed every 30 ms): 765 MiB at 1,000,000 requests of 5,000 keys,
1,151 MiB at 2,000,000 (~405 bytes a request, ~380 MiB at none)."""
KEY_BYTES = 700
"""A distinct key's state in the store and its string (1,500,000 requests, each a key of its own:
~640 bytes a key more than 1,500,000 requests of 5,000 keys, the process alone)."""
MAX_ROWS = 10_000_000
"""Rows a trace may hold whatever memory it is given: a simulated run's requests
(harness/campaign/system.py)."""


def replay_bytes(requests: int, keys: int) -> int:
    """A trace's replay peak, estimated before anything is replayed (the constants above)."""
    return BASE_BYTES + REQUEST_BYTES * requests + KEY_BYTES * keys


def rows_within(most_bytes: int) -> int:
    """The rows a replay of ``most_bytes`` holds (~1.55 million in the default 1 GiB), at most
    ``MAX_ROWS``: a table trace's rows are checked against it as a CSV is read or from a Parquet
    file's footer, before they are held."""
    return max(0, min(MAX_ROWS, (most_bytes - BASE_BYTES) // REQUEST_BYTES))


def read_table(path: Path, max_rows: int, bounds: ReadBounds = DEFAULT_BOUNDS) -> pd.DataFrame:
    """The trace's rows (at most ``max_rows``), its columns each named once: pandas would read a
    second ``t`` as ``t.1`` (CSV) and replay the first without a word, so a repeated name is
    refused, naming it."""
    if not path.is_file():
        raise ScenarioError(f"--trace {path}: no such file")
    suffix = path.suffix.lower()
    if suffix not in (".parquet", ".pq", ".csv", ".txt"):
        raise ScenarioError(f"--trace {path}: expected a .csv or .parquet file")
    try:
        if suffix in (".parquet", ".pq"):
            meta = pq.read_metadata(path)
            _check_rows(path, meta.num_rows, max_rows)
            _check_names(path, meta.schema.to_arrow_schema().names)
            import pandas as pd

            return pd.read_parquet(path)
        return _read_csv(path, max_rows, bounds)
    except ScenarioError:
        raise
    except Exception as exc:  # pandas/pyarrow raise many types for a corrupt file
        raise ScenarioError(f"--trace {path}: cannot be read ({exc.__class__.__name__}: {exc})") from None


def _check_rows(path: Path, rows: int, max_rows: int) -> None:
    if rows > max_rows:
        raise ScenarioError(f"--trace {path}: {rows:,} rows or more is beyond a replay's bound of {max_rows:,} requests "
                            f"(~{REQUEST_BYTES} bytes each replayed: --replay-memory gives it more); judge a log of any "
                            "size with `validate --traffic` (streamed), or replay it in parts")


def _check_names(path: Path, names: list[str]) -> None:
    repeated = next((str(n) for i, n in enumerate(names) if n in names[:i]), None)
    if repeated is not None:
        raise ScenarioError(f"--trace {path}: column {repeated} appears more than once (each column once)")


def _read_csv(path: Path, max_rows: int, bounds: ReadBounds) -> pd.DataFrame:
    """A CSV trace through the bounded line stream (stream.py: line length, UTF-8, the first
    block), a block at a time, every column as text (the checks below convert them), its rows
    counted against ``max_rows`` as they come."""
    stream = LineStream(path, bounds)
    names: list[str] | None = None
    tables: list[pa.Table] = []
    rows = 0
    for block in stream.blocks():
        data = block.data
        if names is None:
            header, _, data = data.partition(b"\n")
            names = [str(n) for n in csv.read_csv(pa.BufferReader(header + b"\n")).column_names]
            _check_names(path, names)
        if not data.strip():
            continue
        try:
            table = csv.read_csv(pa.BufferReader(data), read_options=csv.ReadOptions(column_names=names),
                                 convert_options=csv.ConvertOptions(column_types={n: pa.string() for n in names}))
        except pa.ArrowInvalid as exc:
            raise ScenarioError(f"--trace {path}: lines {block.first_line:,} on: {str(exc).splitlines()[0]}") from None
        rows += table.num_rows
        _check_rows(path, rows, max_rows)
        tables.append(table)
    if stream.counts.long:
        raise ScenarioError(f"--trace {path}: {stream.counts.long:,} lines longer than {bounds.max_line_bytes:,} bytes "
                            "(a trace row is a few fields)")
    if names is None:
        raise ScenarioError(f"--trace {path}: empty file")
    table = pa.concat_tables(tables) if tables else pa.table({n: pa.array([], pa.string()) for n in names})
    return table.to_pandas()


class TraceFile(TrafficModel):
    name = "trace"
    summary = "a recorded trace (--trace FILE: CSV or Parquet with t, key[, cost, client_class, route])"

    def __init__(self, path: str | Path, max_rows: int | None = None) -> None:
        self.path = Path(path)
        self.name = trace_run_name(self.path)
        self.max_rows = rows_within(REPLAY_BYTES) if max_rows is None else max_rows
        self._arrivals = self.generate()  # read now, so a bad file fails before any run

    def generate(self) -> Arrivals:
        path = self.path
        df = read_table(path, self.max_rows)
        missing = [c for c in ("t", "key") if c not in df.columns]
        if missing:
            raise ScenarioError(f"--trace {path}: missing column(s) {', '.join(missing)}; have {', '.join(map(str, df.columns))}")
        import pandas as pd

        t = pd.to_numeric(df["t"], errors="coerce").to_numpy(dtype=np.float64)
        if len(t) == 0:
            raise ScenarioError(f"--trace {path}: no rows")
        if not np.isfinite(t).all():
            row = int(np.flatnonzero(~np.isfinite(t))[0])
            raise ScenarioError(f"--trace {path}: column t, row {row + 2}: not a number ({df['t'].iloc[row]!r})")
        cost = (pd.to_numeric(df["cost"], errors="coerce").to_numpy(dtype=np.float64)
                if "cost" in df.columns else np.ones(len(t)))
        if not (np.isfinite(cost) & (cost > 0)).all():
            row = int(np.flatnonzero(~(np.isfinite(cost) & (cost > 0)))[0])
            raise ScenarioError(f"--trace {path}: column cost, row {row + 2}: must be a positive number")
        classes = df["client_class"].astype(str).to_numpy(dtype=object) if "client_class" in df.columns \
            else np.full(len(t), LEGIT, dtype=object)
        bad = ~np.isin(classes, CLASSES)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise ScenarioError(f"--trace {path}: column client_class, row {row + 2}: {classes[row]!r} is not one of {', '.join(CLASSES)}")
        routes = df["route"].fillna(ITEMS.model_name).astype(str).replace("", ITEMS.model_name).to_numpy(dtype=object) \
            if "route" in df.columns else np.full(len(t), ITEMS.model_name, dtype=object)
        unknown = ~np.isin(routes, list(BY_MODEL_NAME))
        if unknown.any():
            row = int(np.flatnonzero(unknown)[0])
            raise ScenarioError(f"--trace {path}: column route, row {row + 2}: {routes[row]!r} is not one of {', '.join(BY_MODEL_NAME)}")
        blank = df["key"].isna().to_numpy() | (df["key"].astype(str).str.strip() == "").to_numpy()
        if blank.any():
            row = int(np.flatnonzero(blank)[0])
            raise ScenarioError(f"--trace {path}: column key, row {row + 2}: empty (every request needs a key)")
        keys = df["key"].astype(str).to_numpy(dtype=object)
        return Arrivals.from_columns(t - t.min() if t.min() < 0 else t, keys, classes, routes, cost)

    def expected_requests(self) -> float:
        return len(self._arrivals)

    @property
    def max_cost(self) -> float:
        return max(self._arrivals.cost)
