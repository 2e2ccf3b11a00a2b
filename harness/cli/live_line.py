"""One live line on a terminal (rich ``Live``, transient: gone when the work ends, the lines printed
meanwhile kept above it); piped there is none. `judge`'s and `simulate`'s progress are such lines."""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType

from rich.console import Console, RenderableType
from rich.live import Live
from rich.text import Text

REFRESH_PER_S = 4


def live_display(out: Console, renderable: Callable[[], RenderableType]) -> Live | None:
    """``renderable`` redrawn REFRESH_PER_S times a second on a terminal, gone when stopped (what
    was printed meanwhile kept above it); None when the output is not a terminal."""
    if not out.is_terminal:
        return None
    live = Live(console=out, get_renderable=renderable, refresh_per_second=REFRESH_PER_S, transient=True,
                redirect_stdout=False, redirect_stderr=False)
    live.start()
    return live


class LiveLine:
    """Subclasses say what the line holds now (``line``); the display redraws it four times a second."""

    def __init__(self, out: Console) -> None:
        self.out = out
        self.live: Live | None = None

    def line(self) -> Text:
        raise NotImplementedError

    def __enter__(self) -> LiveLine:
        self.live = live_display(self.out, self.cut_line)
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
