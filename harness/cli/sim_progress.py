"""What `simulate` shows while a run is simulated, on a terminal: one live line (rich, transient)
with the run, its planned requests and its seconds so far, above which each finished run's line
is printed; piped there is none (the lines per run say it all)."""

from __future__ import annotations

import time
from types import TracebackType

from rich.console import Console
from rich.live import Live
from rich.text import Text

from harness.sim.runner import SimRun

REFRESH_PER_S = 4


class SimProgress:
    def __init__(self, out: Console) -> None:
        self.out = out
        self.live: Live | None = None
        self.label = ""
        self.planned = 0.0
        self.t0 = time.monotonic()

    def __enter__(self) -> SimProgress:
        if self.out.is_terminal:
            self.live = Live(console=self.out, get_renderable=self.line, refresh_per_second=REFRESH_PER_S,
                             transient=True, redirect_stdout=False, redirect_stderr=False)
            self.live.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None

    def started(self, i: int, n: int, run: SimRun) -> None:
        """Run ``i`` of ``n`` begins (``RunnerEvents.run_start``)."""
        self.label, self.t0 = f"run {i}/{n} {run.scenario} x {run.algorithm}", time.monotonic()
        self.planned = run.model.expected_requests()

    def line(self) -> Text:
        """The one line, cut to the terminal's width."""
        text = Text.assemble((self.label, "dim"), f": simulating about {self.planned:,.0f} requests, "
                                                  f"{time.monotonic() - self.t0:.1f} s") if self.label else Text("")
        text.truncate(self.out.width - 1, overflow="ellipsis")
        return text
