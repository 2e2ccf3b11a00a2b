"""The target's decision log: rows appended on the event loop (one deque append), flushed as
Parquet parts by a background thread, made one file on shutdown.

The request path only appends a tuple in ``DECISION_SCHEMA`` column order; converting to Arrow
and writing happens in the flusher thread every ``flush_every_s``, each flush one complete part
(``contract.decision_file``). A SIGKILL therefore loses at most the rows of the last interval:
every earlier flush is on disk and readable. ``close`` (called from the app's lifespan shutdown,
which uvicorn runs on SIGTERM) drains what is left and joins the parts into the file at the
path. ``start`` first removes whatever log the path held, so an earlier run's is never read as
this one's. ``ideal_allowed`` is written as null: the analysis recomputes it from the arrivals.
"""

from __future__ import annotations

import threading
from collections import deque
from pathlib import Path

import pyarrow as pa

from contract import decision_file
from contract.schema import DECISION_SCHEMA

Row = tuple


class DecisionLog:
    def __init__(self, path: Path, flush_every_s: float = 1.0) -> None:
        self.path = path
        self.rows: deque[Row] = deque()
        """Append-only from the event loop; deque append/popleft are thread-safe."""
        self.written = 0
        """Rows on disk (in flushed parts or the finished file)."""
        self._every = flush_every_s
        self._parts = 0
        self._started = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="decision-log", daemon=True)

    def start(self) -> None:
        decision_file.start(self.path)
        # pyarrow's first conversion of Python objects imports pandas (~380 modules): paid now,
        # at startup, not by the flusher holding the GIL a second into the first run
        pa.array([], type=pa.float64())
        self._started = True
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            self._flush()

    def _flush(self) -> None:
        rows, popleft = self.rows, self.rows.popleft
        batch = [popleft() for _ in range(len(rows))]
        if not batch:
            return
        columns = list(zip(*batch))
        arrays = [pa.array(col, type=field.type) for col, field in zip(columns, DECISION_SCHEMA)]
        self._parts += 1
        decision_file.write_part(self.path, self._parts, pa.Table.from_arrays(arrays, schema=DECISION_SCHEMA))
        self.written += len(batch)

    def close(self) -> None:
        """Stop the flusher, write every remaining row and join the parts into the file."""
        if not self._started:
            return
        self._started = False
        self._stop.set()
        self._thread.join()
        self._flush()
        decision_file.finish(self.path)
