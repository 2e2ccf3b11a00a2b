"""What every access log reader shares: opening a plain or gzipped file, the batch of columns a
reader yields, and the account of lines that could not be read (counted, the first three kept
with their line numbers)."""

from __future__ import annotations

import gzip
import io
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..base import ScenarioError

GZIP_MAGIC = b"\x1f\x8b"
SHOWN_BAD = 3
MAX_BAD_SHARE = 0.01
"""More unreadable lines than this share: the format is wrong, not a few lines."""
FIELDS = ("addr", "xff", "user", "api_key", "method", "path", "agent", "status", "key")
"""The canonical columns a reader may yield (every one optional but a time and an address or key)."""


class LogError(ScenarioError):
    """An access log that cannot be judged: one line naming the file, the format and what is wrong."""


def is_gzipped(path: Path) -> bool:
    """Whether the log starts with the gzip magic (whatever its name); a path that is no
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


def open_bytes(path: Path) -> BinaryIO:
    """The file's bytes, gunzipped when it starts with the gzip magic."""
    if is_gzipped(path):
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return path.open("rb")


def head_lines(path: Path, n: int = 20) -> list[str]:
    """The first ``n`` non-empty lines (format detection and header lines)."""
    out: list[str] = []
    with open_bytes(path) as raw:
        for line in io.TextIOWrapper(raw, encoding="latin-1", newline=""):
            if line.strip():
                out.append(line.rstrip("\r\n"))
            if len(out) >= n:
                break
    return out


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
    """Unreadable lines: how many, and the first few as (line number or None, text)."""

    count: int = 0
    shown: list[tuple[int | None, str]] = field(default_factory=list)
    fragments: set[str] = field(default_factory=set)
    """Shown texts that are a part of their line (a time that did not parse), not the line."""

    def add(self, number: int | None, text: str, fragment: bool = False) -> None:
        self.count += 1
        if len(self.shown) < SHOWN_BAD:
            self.shown.append((number, text[:200]))
            if fragment:
                self.fragments.add(text[:200])

    def located(self, path: Path) -> list[tuple[int | None, str]]:
        """The shown lines with their line numbers; a reader that only kept the text (the
        multithreaded CSV parser does not know them) gets them from one more scan of the file."""
        missing = [text for number, text in self.shown if number is None]
        if not missing:
            return self.shown
        found: dict[str, int] = {}
        with open_bytes(path) as raw:
            for number, line in enumerate(io.TextIOWrapper(raw, encoding="latin-1", newline=""), start=1):
                line = line.rstrip("\r\n")[:200]
                for text in missing:
                    if text not in found and (line == text or (text in self.fragments and text in line)):
                        found[text] = number
                if len(found) == len(missing):
                    break
        return [(number if number is not None else found.get(text), text) for number, text in self.shown]


class LogReader:
    """A format's reader: ``batches()`` streams the rows; ``lines`` and ``bad`` are final after it."""

    name = "log"
    whole_second: bool | None = None
    """The format's times are whole seconds (True), finer (False), or it depends on the data (None)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lines = 0
        self.bad = BadLines()

    def batches(self) -> Iterator[LogBatch]:
        raise NotImplementedError

    def check_bad(self) -> None:
        """Exit-2 when more than 1% of the lines could not be read: the format tried is wrong."""
        if self.lines and self.bad.count > MAX_BAD_SHARE * self.lines:
            first = "; ".join(f"line {n}: {t!r}" for n, t in self.bad.located(self.path))
            raise LogError(f"{self.path}: {self.bad.count:,} of {self.lines:,} lines "
                           f"({self.bad.count / self.lines:.1%}) are not {self.name} (more than 1%); first: {first}; "
                           "a log of your own format: --log-format 'THE NGINX log_format STRING' (or --format NAME)")


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
    """The rows whose time parsed; the others counted as unreadable (by their time text, or
    their line number when the reader knows it)."""
    ok = np.isfinite(t)
    if ok.all():
        return LogBatch(t, columns)
    for i in np.flatnonzero(~ok)[:SHOWN_BAD + 1]:
        text = texts[int(i)].as_py() if texts is not None else ""
        bad.add(None if numbers is None else int(numbers[i]), text or "", fragment=True)
    bad.count += int((~ok).sum()) - min(int((~ok).sum()), SHOWN_BAD + 1)
    mask = pa.array(ok)
    return LogBatch(t[ok], {k: pc.filter(v, mask) for k, v in columns.items()})
