"""What every access log reader shares: the bounded stream of lines it reads (``stream.py``), the
batch of columns it yields, and the account of lines that could not be read (counted by reason,
the first three kept with their line numbers)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .stream import DEFAULT_BOUNDS, Block, LineStream, LogError, ReadBounds
from .times import EARLIEST, LATEST

SHOWN_BAD = 3
FIELDS = ("addr", "xff", "user", "api_key", "method", "path", "agent", "status", "key")
"""The canonical columns a reader may yield (every one optional but a time and an address or key)."""


@dataclass
class LogBatch:
    """Rows of one read block: ``t`` in epoch seconds, the canonical columns (``FIELDS``, arrow
    strings, null where not logged) that the format has."""

    t: np.ndarray
    columns: dict[str, pa.Array]

    def __len__(self) -> int:
        return len(self.t)


@dataclass
class BadLines:
    """Unreadable lines: how many (``time``: of them, dated outside ``EARLIEST``..``LATEST``), and
    the first few as (line number or None, text)."""

    count: int = 0
    time: int = 0
    shown: list[tuple[int | None, str]] = field(default_factory=list)
    fragments: set[str] = field(default_factory=set)
    """Shown texts that are a part of their line (a time that did not parse), not the line."""

    def add(self, number: int | None, text: str, fragment: bool = False) -> None:
        self.count += 1
        if len(self.shown) < SHOWN_BAD:
            self.shown.append((number, text[:200]))
            if fragment:
                self.fragments.add(text[:200])

    def located(self, path: Path, bounds: ReadBounds = DEFAULT_BOUNDS) -> list[tuple[int | None, str]]:
        """The shown lines with their line numbers; a reader that only kept the text (the
        multithreaded CSV parser does not know them) gets them from one more bounded scan."""
        missing = [text for number, text in self.shown if number is None]
        if not missing:
            return self.shown
        found: dict[str, int] = {}
        stream = LineStream(path, ReadBounds(bounds.max_line_bytes, accept_truncated=True))
        for block in stream.blocks():
            for i, line in enumerate(block.data.decode("utf-8").split("\n")[:-1]):
                line = line.rstrip("\r")[:200]
                for text in missing:
                    if text not in found and (line == text or (text in self.fragments and text in line)):
                        found[text] = block.number(i)
            if len(found) == len(missing):
                break
        return [(number if number is not None else found.get(text), text) for number, text in self.shown]


@dataclass(frozen=True)
class ReadSummary:
    """The reader's account: lines read (every line of the file), used (requests), and skipped
    for each reason; lines whose bytes were replaced are used, and counted apart."""

    lines: int
    used: int
    long: int
    time: int
    unreadable: int
    replaced: int
    truncated: str | None
    max_line_bytes: int

    def line(self, fmt: str) -> str:
        skipped = [f"{n:,} {why}" for n, why in ((self.long, f"longer than {self.max_line_bytes:,} bytes"),
                                                 (self.time, "dated outside 1995-2100"),
                                                 (self.unreadable, f"not {fmt}")) if n]
        out = f"{self.lines:,} lines read, {self.used:,} used; skipped: {', '.join(skipped) or 'none'}"
        if self.replaced:
            out += f"; {self.replaced:,} with bytes that are not UTF-8 (replaced, used)"
        if self.truncated:
            out += f"; the gzip {self.truncated} after line {self.lines:,}: judged on the lines read before it " \
                   "(--accept-truncated)"
        return out


class LogReader:
    """A format's reader: ``batches()`` streams the rows; ``lines`` and ``bad`` are final after it."""

    name = "log"
    whole_second: bool | None = None
    """The format's times are whole seconds (True), finer (False), or it depends on the data (None)."""

    def __init__(self, path: Path, bounds: ReadBounds = DEFAULT_BOUNDS) -> None:
        self.path = path
        self.bounds = bounds
        self.stream = LineStream(path, bounds)
        self.lines = 0
        self.used = 0
        self.bad = BadLines()

    def batches(self) -> Iterator[LogBatch]:
        """The format's batches (``_read``), the rows used counted as they go."""
        for batch in self._read():
            self.used += len(batch)
            yield batch

    def _read(self) -> Iterator[LogBatch]:
        raise NotImplementedError

    def _blocks(self, skip_rows: int = 0) -> Iterator[Block]:
        """The stream's blocks; after the first, a file none of whose lines was of the format is
        refused at once (a binary file, the wrong format) rather than read to its end."""
        for i, block in enumerate(self.stream.blocks()):
            if i == 1:
                self._check_first()
            if i == 0 and skip_rows:
                cut = 0
                for _ in range(skip_rows):
                    cut = block.data.find(b"\n", cut) + 1
                block = Block(block.data[cut:], block.first_line + skip_rows,
                              block.numbers[skip_rows:] if block.numbers is not None else None)
            yield block
        self._check_first()

    def _check_first(self) -> None:
        if not self.used and self.lines:
            first = "; ".join(f"line {n}: {t!r}" for n, t in self.bad.located(self.path, self.bounds))
            raise LogError(f"{self.path}: none of the first {self.lines:,} lines is {self.name} "
                           f"(not a log of this format, or not a log); first: {first}")

    def summary(self) -> ReadSummary:
        counts = self.stream.counts
        return ReadSummary(counts.lines, self.used, counts.long, self.bad.time, self.bad.count - self.bad.time,
                           counts.replaced, counts.truncated, self.bounds.max_line_bytes)

    def check_bad(self) -> None:
        """Exit-2 when more than the bound's share of the lines could not be used: the format tried
        is wrong, or the file is not a log."""
        counts = self.stream.counts
        bad = self.bad.count + counts.long
        share = self.bounds.max_bad_share
        if counts.lines and bad > share * counts.lines:
            first = "; ".join(f"line {n}: {t!r}" for n, t in self.bad.located(self.path, self.bounds))
            raise LogError(f"{self.path}: {bad:,} of {counts.lines:,} lines ({bad / counts.lines:.1%}) cannot be used "
                           f"as {self.name}, more than --max-bad-share {share:.1%} ({self.summary().line(self.name)}); "
                           f"first: {first or '-'}; a log of your own format: --log-format 'THE NGINX log_format "
                           "STRING' (or --format NAME)")


_REQUEST = r"^(?P<method>[A-Z]+) (?:[a-zA-Z][a-zA-Z0-9+.-]*://[^/ ]*)?(?P<path>[^ ?#]*)"
"""``GET /api/items?x=1 HTTP/1.1`` (ALB logs the absolute form ``GET https://host:443/api/items``)."""


def canonical(raw: dict[str, pa.Array]) -> dict[str, pa.Array]:
    """Logged ``-`` and empty values become null; a request line becomes ``method`` and ``path``
    (its query dropped: routes are matched by path)."""
    out: dict[str, pa.Array] = {}
    for name, values in raw.items():
        values = pc.cast(values, pa.string())
        missing = pc.or_(pc.equal(values, "-"), pc.equal(values, ""))
        out[name] = pc.if_else(pc.fill_null(missing, True), pa.scalar(None, pa.string()), values)
    if "request" in out:
        parts = pc.extract_regex(pc.fill_null(out.pop("request"), ""), _REQUEST)
        out.setdefault("method", parts.field("method"))
        out.setdefault("path", parts.field("path"))
    elif "path" in out:
        out["path"] = pc.extract_regex(pc.fill_null(out["path"], ""), r"^(?P<p>[^?#]*)").field("p")
    return out


def batch_of(t: np.ndarray, columns: dict[str, pa.Array], texts: pa.Array | None, bad: BadLines,
             numbers: np.ndarray | None = None) -> LogBatch:
    """The rows whose time parsed and is plausible (``EARLIEST``..``LATEST``: a clock at 1970 or
    in 9999 is no request time); the others counted as unreadable (by their time text, or their
    line number when the reader knows it)."""
    with np.errstate(invalid="ignore"):
        ok = (t >= EARLIEST) & (t <= LATEST)
    if ok.all():
        return LogBatch(t, columns)
    bad.time += int(np.count_nonzero(np.isfinite(t) & ~ok))
    for i in np.flatnonzero(~ok)[:SHOWN_BAD + 1]:
        text = texts[int(i)].as_py() if texts is not None else ""
        bad.add(None if numbers is None else int(numbers[i]), text or "", fragment=True)
    bad.count += int((~ok).sum()) - min(int((~ok).sum()), SHOWN_BAD + 1)
    mask = pa.array(ok)
    return LogBatch(t[ok], {k: pc.filter(v, mask) for k, v in columns.items()})
