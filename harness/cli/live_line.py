"""One live line on a terminal (rich ``Live``, transient: gone when the work ends, the lines printed
meanwhile kept above it); piped there is none. `judge`'s and `simulate`'s progress are such lines."""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.live import Live
from rich.text import Text

REFRESH_PER_S = 4


class LiveLine:
    """Subclasses say what the line holds now (``line``); the display redraws it four times a second."""

    def __init__(self, out: Console) -> None:
        self.out = out
        self.live: Live | None = None

    def line(self) -> Text:
        raise NotImplementedError

    def __enter__(self) -> LiveLine:
        if self.out.is_terminal:
            self.live = Live(console=self.out, get_renderable=self.cut_line, refresh_per_second=REFRESH_PER_S,
                             transient=True, redirect_stdout=False, redirect_stderr=False)
            self.live.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None

    def cut_line(self) -> Text:
        """The line, cut to the terminal's width (one line, never wrapped)."""
        text = self.line()
        text.truncate(self.out.width - 1, overflow="ellipsis")
        return text
