"""A progress bar for a long read of an access log or trace, on a terminal (rich, on stderr):
the file's bytes read against its size (a gzip's compressed bytes), the rate, the lines so far and
the time left. It appears only for a read still going after SHOW_AFTER_S (a small file shows
nothing) and goes when the read ends; piped there is none. Every command gets it (``main``)."""

from __future__ import annotations

import time
from types import TracebackType

from rich.console import Console
from rich.errors import LiveError
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from scenarios.access_log.stream import ON_READ, LineStream

SHOW_AFTER_S = 1.0


class ReadProgress:
    def __init__(self, out: Console) -> None:
        self.out = out
        self.progress: Progress | None = None
        self.tasks: dict[int, TaskID] = {}
        self.started: dict[int, float] = {}

    def __enter__(self) -> ReadProgress:
        if self.out.is_terminal:
            ON_READ.listeners.append(self.heard)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self.heard in ON_READ.listeners:
            ON_READ.listeners.remove(self.heard)
        self._stop()

    def heard(self, stream: LineStream, done: bool) -> None:
        """A block read (``ON_READ``): the stream's bar, made once the read has lasted SHOW_AFTER_S."""
        key = id(stream)
        if done:
            self.started.pop(key, None)
            if self.progress is not None and self.tasks.pop(key, None) is not None and not self.tasks:
                self._stop()
            return
        now = time.monotonic()
        if now - self.started.setdefault(key, now) < SHOW_AFTER_S:
            return
        progress = self._started()
        if progress is None:
            return
        if key not in self.tasks:
            self.tasks[key] = progress.add_task(stream.path.name, total=_size(stream), lines=0)
        progress.update(self.tasks[key], completed=stream.counts.raw_bytes, lines=stream.counts.lines)

    def _started(self) -> Progress | None:
        """The bars' display, started once; None where another live display holds the console."""
        if self.progress is None:
            progress = Progress(TextColumn("reading {task.description}"), BarColumn(), DownloadColumn(),
                                TransferSpeedColumn(), TextColumn("{task.fields[lines]:,} lines"), TimeRemainingColumn(),
                                console=self.out, transient=True)
            try:
                progress.start()
            except LiveError:
                return None
            self.progress = progress
        return self.progress

    def _stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None
            self.tasks.clear()


def _size(stream: LineStream) -> int | None:
    """The file's size, or None (a pipe, a device: no end to measure against)."""
    try:
        size = stream.path.stat().st_size
    except OSError:
        return None
    return size or None
