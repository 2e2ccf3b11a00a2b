"""A log's requests on disk in time order, read back a block at a time: what `validate --traffic`
judges, so that its memory does not grow with the log.

Each request is a 20-byte record (its time, and its identity, route and agent codes), appended
as the reader's blocks come to an unnamed temporary file (``tempfile.TemporaryFile``: on Linux
an ``O_TMPFILE`` with no name, so nothing is left on disk when the process dies by any signal;
``TMPDIR`` says where). A log written in time order, the usual case, is read back as written.
A log with lines out of order is sorted exactly, on disk: a histogram of its times cuts the span
into buckets of about ``SORT_RECORDS`` records, every record is appended to its bucket's file in
log order, and each bucket is sorted (stable) in turn. That is the order one stable sort of the
whole log gives, in the memory of one bucket: a reorder window would misplace any line later
than the window.

Readers go by position (``os.pread``), so forked replay workers share the file, each at its own pace.
"""

from __future__ import annotations

import os
import tempfile
import weakref
from collections.abc import Iterator

import numpy as np

RECORD = np.dtype([("t", "<f8"), ("identity", "<i4"), ("route", "<i4"), ("agent", "<i4")])
BLOCK_RECORDS = 1 << 18
"""Records read back at a time (5 MiB). A replay's work on a block takes ~100 bytes a record
(times spread, codes, per-request lists, sums): 2^20 records added ~90 MiB to a worker's peak,
2^18 nothing above the log's read, at the same CPU time (``bench log-memory``)."""
SORT_RECORDS = 1 << 21
"""Records a sort bucket holds (about: one histogram cell is never split): the sort's memory."""
CELLS = 1 << 20
"""Histogram cells over the log's span: a bucket's bound is met within one cell's records."""


class RecordFile:
    """Records appended, then read by position."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile(prefix="ratelimit-bench-log-")  # noqa: SIM115 (lives as long as the log)
        self.n = 0
        self.close = weakref.finalize(self, self._file.close)
        """Closed now, or when the records are no longer referenced (the log's, by the LogTraffic that holds them)."""

    def append(self, records: np.ndarray) -> None:
        self._file.write(records.tobytes())
        self.n += len(records)

    def sealed(self) -> RecordFile:
        """Every record written through to the file (readers read it by position, not through our buffer)."""
        self._file.flush()
        return self

    def read(self, first: int, count: int) -> np.ndarray:
        size = RECORD.itemsize
        return np.frombuffer(os.pread(self._file.fileno(), count * size, first * size), RECORD)

    def chunks(self, size: int | None = None) -> Iterator[np.ndarray]:
        size = size or BLOCK_RECORDS
        for first in range(0, self.n, size):
            yield self.read(first, min(size, self.n - first))


def sorted_by_time(raw: RecordFile, t_min: float, t_max: float) -> RecordFile:
    """``raw``'s records in time order (ties in file order), sorted on disk bucket by bucket."""
    width = (t_max - t_min) / CELLS or 1.0

    def cell(t: np.ndarray) -> np.ndarray:
        return np.minimum(((t - t_min) / width).astype(np.int64), CELLS)

    counts = np.zeros(CELLS + 1, dtype=np.int64)
    for records in raw.chunks():
        counts += np.bincount(cell(records["t"]), minlength=CELLS + 1)
    bucket_of_cell = (np.cumsum(counts) - counts) // SORT_RECORDS  # by the records before the cell: monotone
    buckets: dict[int, RecordFile] = {}
    for records in raw.chunks():
        bucket = bucket_of_cell[cell(records["t"])]
        order = np.argsort(bucket, kind="stable")
        ordered, keys = records[order], bucket[order]
        cuts = np.flatnonzero(np.diff(keys)) + 1
        for b, part in zip(keys[np.concatenate([[0], cuts])].tolist(), np.split(ordered, cuts)):
            buckets.setdefault(b, RecordFile()).append(part)
    out = RecordFile()
    for b in sorted(buckets):
        records = buckets.pop(b).sealed()
        whole = records.read(0, records.n)
        out.append(whole[np.argsort(whole["t"], kind="stable")])
        records.close()
    return out.sealed()


def spread(t: np.ndarray) -> np.ndarray:
    """Whole-second sorted times with each second's requests spread evenly over it (in log order).
    Each second is a run of equal values, found by one comparison (no sort, as ``np.unique``
    would make: it costs several copies of the column)."""
    n = len(t)
    if not n:
        return t.copy()
    starts = np.empty(n, dtype=bool)
    starts[0] = True
    np.not_equal(t[1:], t[:-1], out=starts[1:])
    first = np.flatnonzero(starts)
    counts = np.diff(first, append=n)
    second = np.cumsum(starts, dtype=np.int32) - 1
    out = np.arange(n, dtype=np.float64)
    out -= first[second]
    out /= counts[second]
    out += t
    return out


def time_blocks(records: RecordFile, size: int | None = None) -> Iterator[tuple[int, np.ndarray]]:
    """(position of the block's first record, the block) in time order; a block never splits a run
    of equal times (a whole second of a whole-second log), so ``spread`` of a block is exact."""
    first, carry, read = 0, None, 0
    for chunk in records.chunks(size):
        read += len(chunk)
        block = chunk if carry is None else np.concatenate([carry, chunk])
        carry = None
        if read < records.n:
            t = block["t"]
            cut = int(np.searchsorted(t, t[-1], side="left"))
            block, carry = block[:cut], block[cut:]
        if len(block):
            yield first, block
            first += len(block)
