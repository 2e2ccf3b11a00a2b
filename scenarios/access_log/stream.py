"""The one way a log or trace file is read: blocks of whole lines, memory independent of the file.

Every bound is applied here, before a parser sees a byte:

- a line longer than ``max_line_bytes`` is counted and skipped (its bytes are never held: a
  20 MB line or ``/dev/zero`` costs one block);
- bytes that are not UTF-8 are replaced (U+FFFD) and the lines that held them counted: arrow's
  string columns and the key code need text;
- a gzip that ends early or fails its checksum stops the read with the line and byte it reached
  (``zlib`` is driven here, block by block, so the error is ours to name); with
  ``accept_truncated`` what was read is judged and the summary says so;
- the first block must hold a line within the bound: a binary file or an endless stream with no
  newline is refused at once, not read to its end.

A block is a few MiB of decompressed text, so Ctrl-C (KeyboardInterrupt between blocks) stops a
reader within a block's parse.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from ..base import ScenarioError

BLOCK_BYTES = 1 << 22
MAX_LINE_BYTES = 64 * 1024
MAX_BAD_SHARE = 0.01
"""More bad lines than this share: the format is wrong (or the file is not a log), not a few lines."""
GZIP_MAGIC = b"\x1f\x8b"
log = logging.getLogger(__name__)


class LogError(ScenarioError):
    """An access log or trace that cannot be judged: one line naming the file and what is wrong."""


@dataclass(frozen=True)
class ReadBounds:
    """How much a reader accepts (``--max-line-bytes``, ``--max-bad-share``, ``--accept-truncated``)."""

    max_line_bytes: int = MAX_LINE_BYTES
    max_bad_share: float = MAX_BAD_SHARE
    accept_truncated: bool = False


DEFAULT_BOUNDS = ReadBounds()


@dataclass
class StreamCounts:
    """What the stream met: lines (every one, skipped ones included), skipped long lines, lines
    whose bytes were replaced, and where a compressed file broke off (None: it did not)."""

    lines: int = 0
    long: int = 0
    replaced: int = 0
    bytes: int = 0
    raw_bytes: int = 0
    """The file's own bytes read so far (a gzip's compressed ones): progress against its size."""
    truncated: str | None = None


@dataclass
class Block:
    """Whole lines (UTF-8, ``\\n``-terminated, none longer than the bound) and the number of the first."""

    data: bytes
    first_line: int
    numbers: list[int] | None = field(default=None)
    """Each line's number when lines were skipped inside the block (else first_line + i)."""

    def number(self, i: int) -> int:
        return self.numbers[i] if self.numbers is not None else self.first_line + i


def is_gzipped(path: Path) -> bool:
    """Whether the file starts with the gzip magic (whatever its name); a path that is no
    readable file: LogError naming it."""
    if path.is_dir():
        raise LogError(f"{path}: is a folder, not a file")
    try:
        with path.open("rb") as probe:
            return probe.read(2) == GZIP_MAGIC
    except FileNotFoundError:
        raise LogError(f"{path}: no such file") from None
    except OSError as exc:
        raise LogError(f"{path}: cannot be read ({exc.strerror})") from None


PIECE_BYTES = 1 << 16
"""Compressed bytes fed to zlib at a time: a checksum error loses no more than this piece's text."""


def _gunzipped(raw: BinaryIO, counts: StreamCounts, block: int) -> Iterator[bytes]:
    """The members of a gzip file, decompressed a piece at a time (output bounded by ``block``);
    an end before the last member's trailer or a failed check is noted in ``counts``."""
    inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
    pending, started = b"", False
    while True:
        if not pending:
            pending = raw.read(PIECE_BYTES)
            counts.raw_bytes += len(pending)
            if not pending:
                if started and not inflate.eof:
                    counts.truncated = "ends early"
                return
        saved = inflate.copy()
        try:
            out = inflate.decompress(pending, block)
        except zlib.error as exc:
            counts.truncated = "fails its check (CRC or length)" if "check" in str(exc) else f"is corrupt ({exc})"
            if "check" in str(exc):  # the text is whole, its trailer is not: keep what came before it
                yield from _drained(saved, pending[:-8], block)
            return
        started = True
        pending = inflate.unconsumed_tail
        if inflate.eof:  # the next member (concatenated gzip files), if any
            pending, started = inflate.unused_data, False
            inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        if out:
            yield out


def _drained(inflate: Any, data: bytes, block: int) -> Iterator[bytes]:
    while data:
        try:
            out = inflate.decompress(data, block)
        except zlib.error:
            return
        if out:
            yield out
        data = inflate.unconsumed_tail


def _chunks(path: Path, counts: StreamCounts, block: int) -> Iterator[bytes]:
    gz = is_gzipped(path)
    try:
        raw = path.open("rb")
    except OSError as exc:
        raise LogError(f"{path}: cannot be read ({exc.strerror})") from None
    with raw:
        if gz:
            yield from _gunzipped(raw, counts, block)
        else:
            while chunk := raw.read(block):
                counts.raw_bytes += len(chunk)
                yield chunk


class ReadHook:
    """Told ``(stream, done)`` after each block a stream yields and once when it ends, however it
    ends (after Locust's ``EventHook``: a progress display listens; nothing does by default). A
    listener that fails is logged and dropped: a display never stops a read."""

    def __init__(self) -> None:
        self.listeners: list[Callable[[LineStream, bool], None]] = []

    def fire(self, stream: LineStream, done: bool) -> None:
        for listener in list(self.listeners):
            try:
                listener(stream, done)
            except Exception:
                self.listeners.remove(listener)
                log.exception("a read listener failed; the read goes on without it")


ON_READ = ReadHook()


class LineStream:
    """A file as blocks of whole, clean lines (see the module's docstring); ``counts`` is final
    after ``blocks()`` ends (a truncated gzip without ``accept_truncated``: LogError there)."""

    def __init__(self, path: Path, bounds: ReadBounds = DEFAULT_BOUNDS, block_bytes: int = BLOCK_BYTES) -> None:
        self.path = path
        self.bounds = bounds
        self.block_bytes = max(block_bytes, bounds.max_line_bytes + 1)
        self.counts = StreamCounts()

    def blocks(self) -> Iterator[Block]:
        try:
            for block in self._blocks():
                ON_READ.fire(self, False)
                yield block
        finally:
            ON_READ.fire(self, True)

    def _blocks(self) -> Iterator[Block]:
        counts, limit = self.counts, self.bounds.max_line_bytes
        rest, skipping, first = b"", False, True
        for chunk in _chunks(self.path, counts, self.block_bytes):
            counts.bytes += len(chunk)
            if skipping:  # inside a long line: drop up to its end
                end = chunk.find(b"\n")
                if end < 0:
                    continue
                chunk, skipping = chunk[end + 1:], False
                counts.lines += 1
                counts.long += 1
            data = rest + chunk
            cut = data.rfind(b"\n") + 1
            data, rest = data[:cut], data[cut:]
            if len(rest) > limit:  # the unfinished line is already past the bound
                rest, skipping = b"", True
            if data:
                block = self._clean(data)
                if block is not None:
                    first = False
                    yield block
            if first and (skipping or counts.bytes >= self.block_bytes):
                self._refuse_first()
        if skipping:
            counts.lines += 1
            counts.long += 1
        if rest and counts.truncated is None:  # a gzip cut short: its last line is cut too, not judged
            block = self._clean(rest + b"\n")
            if block is not None:
                first = False
                yield block
        if first and counts.long:
            self._refuse_first()
        self._check_truncated()

    def _refuse_first(self) -> None:
        raise LogError(f"{self.path}: the first {self.counts.bytes:,} bytes hold no line within "
                       f"{self.bounds.max_line_bytes:,} bytes: not a text log or trace (a binary file, /dev/zero, "
                       "a stream with no newline?); a log with longer lines: --max-line-bytes N")

    def _check_truncated(self) -> None:
        if self.counts.truncated is not None and not self.bounds.accept_truncated:
            raise LogError(f"{self.path}: the gzip {self.counts.truncated} at line {self.counts.lines + 1:,}, "
                           f"byte {self.counts.bytes:,} of its text; --accept-truncated judges the "
                           f"{self.counts.lines:,} lines read before it")

    def _clean(self, data: bytes) -> Block | None:
        """Whole lines: long ones dropped (counted), bad bytes replaced (counted); None if none is left."""
        counts, limit = self.counts, self.bounds.max_line_bytes
        first_line = counts.lines + 1
        lines = data.split(b"\n")[:-1]
        counts.lines += len(lines)
        numbers = None
        if max(map(len, lines), default=0) > limit:
            kept = [(first_line + i, line) for i, line in enumerate(lines) if len(line) <= limit]
            counts.long += len(lines) - len(kept)
            if not kept:
                return None
            numbers = [n for n, _ in kept]
            data = b"\n".join(line for _, line in kept) + b"\n"
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            parts = data.split(b"\n")
            fixed = [_replaced(line) for line in parts]
            counts.replaced += sum(1 for line, new in zip(parts, fixed) if new is not line)
            data = b"\n".join(fixed)
        return Block(data, first_line, numbers)

    def skipped(self) -> int:
        """Lines the stream itself dropped (too long)."""
        return self.counts.long


def _replaced(line: bytes) -> bytes:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return line.decode("utf-8", errors="replace").encode("utf-8")
    return line


def head_lines(path: Path, n: int = 20, bounds: ReadBounds = DEFAULT_BOUNDS) -> list[str]:
    """The first ``n`` non-empty lines (format detection and header lines), through the bounds:
    a file whose first block holds no line is refused here."""
    out: list[str] = []
    stream = LineStream(path, ReadBounds(bounds.max_line_bytes, bounds.max_bad_share, accept_truncated=True),
                        block_bytes=1 << 20)
    for block in stream.blocks():
        for line in block.data.decode("utf-8").split("\n")[:-1]:
            if line.strip():
                out.append(line.rstrip("\r"))
            if len(out) >= n:
                return out
    return out
