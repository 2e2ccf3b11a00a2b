"""The target's decision log: rows appended on the event loop (one deque append), written to
Parquet by a background thread as row groups, and finished on shutdown.

The request path only appends a tuple in ``DECISION_SCHEMA`` column order; converting to Arrow
and writing happens in the flusher thread every ``flush_every_s``. ``close`` (called from the
app's lifespan shutdown, which uvicorn runs on SIGTERM) drains what is left, closes the file and
renames it into place, so the finished file appears atomically and holds every row.
``ideal_allowed`` is written as null: the analysis recomputes it from the arrivals.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from contract.schema import DECISION_SCHEMA

Row = tuple


class DecisionLog:
    def __init__(self, path: Path, flush_every_s: float = 1.0) -> None:
        self.path = path
        self.rows: deque[Row] = deque()
        """Append-only from the event loop; deque append/popleft are thread-safe."""
        self.written = 0
        self._every = flush_every_s
        self._tmp = path.with_name(f".{path.name}.partial")
        self._writer: pq.ParquetWriter | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="decision-log", daemon=True)

    def start(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._writer = pq.ParquetWriter(self._tmp, DECISION_SCHEMA)
        # pyarrow's first conversion of Python objects imports pandas (~380 modules): paid now,
        # at startup, not by the flusher holding the GIL a second into the first run
        pa.array([], type=pa.float64())
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            self._flush()

    def _flush(self) -> None:
        rows, popleft = self.rows, self.rows.popleft
        batch = [popleft() for _ in range(len(rows))]
        if not batch or self._writer is None:
            return
        columns = list(zip(*batch))
        arrays = [pa.array(col, type=field.type) for col, field in zip(columns, DECISION_SCHEMA)]
        self._writer.write_table(pa.Table.from_arrays(arrays, schema=DECISION_SCHEMA))
        self.written += len(batch)

    def close(self) -> None:
        """Stop the flusher, write every remaining row and move the file into place."""
        if self._writer is None:
            return
        self._stop.set()
        self._thread.join()
        self._flush()
        self._writer.close()
        self._writer = None
        os.replace(self._tmp, self.path)
