"""What `simulate` shows while a run is simulated, on a terminal: one live line (rich, transient)
with the run, its planned requests and its seconds so far, above which each finished run's line
is printed; piped there is none (the lines per run say it all)."""

from __future__ import annotations

import time

from rich.console import Console
from rich.text import Text

from harness.sim.runner import SimRun

from .live_line import LiveLine


class SimProgress(LiveLine):
    def __init__(self, out: Console) -> None:
        super().__init__(out)
        self.label = ""
        self.planned = 0.0
        self.t0 = time.monotonic()

    def __enter__(self) -> SimProgress:
        super().__enter__()
        return self

    def started(self, i: int, n: int, run: SimRun) -> None:
        """Run ``i`` of ``n`` begins (``RunnerEvents.run_start``)."""
        self.label, self.t0 = f"run {i}/{n} {run.scenario} x {run.algorithm}", time.monotonic()
        self.planned = run.model.expected_requests()

    def line(self) -> Text:
        if not self.label:
            return Text("")
        return Text.assemble((self.label, "dim"), f": simulating about {self.planned:,.0f} requests, "
                                                  f"{time.monotonic() - self.t0:.1f} s")
