"""What `run` shows while a live campaign runs: one line per finished run, and on a terminal one
status line (rich) that follows the current run (starting, waiting to start, then the
target's counters). Piped or in CI there is no status line: one line per run, nothing else."""

from __future__ import annotations

import time
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.status import Status
from rich.text import Text

from contract.run_info import degraded_line
from contract.schema import RUN_ANALYSED, RUN_DEGRADED
from harness.events import RunnerEvents


class RunProgress:
    def __init__(self, out: Console) -> None:
        self.out = out
        self.status: Status | None = None
        self.campaign_t0 = self.run_t0 = time.monotonic()
        self.label = ""
        self.decided = self.rejected = 0
        self.last: tuple[float, int] | None = None

    def __enter__(self) -> RunProgress:
        if self.out.is_terminal:
            self.status = self.out.status("starting", spinner="dots")
            self.status.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._stop()

    @property
    def events(self) -> RunnerEvents[Any]:
        """The runner's hooks that drive this display (any run with a ``name``: a live run, a probe's
        run). The status line goes after the last run: what follows (the analysis) is no run."""
        def run_done(i: int, n: int, run: Any, info: dict[str, Any]) -> None:
            self.done(info)
            if i == n:
                self._stop()

        return RunnerEvents(run_start=lambda i, n, run: self.start(i, n, run.name), counters=self.counters,
                            run_done=run_done)

    def start(self, i: int, n: int, name: str) -> None:
        self.label = f"run {i}/{n} {name}"
        self.run_t0, self.last, self.decided, self.rejected = time.monotonic(), None, 0, 0
        self._show("starting")

    def counters(self, counters: dict[str, Any]) -> None:
        """The target's counters (``/_bench/counters``), polled by the runner while a run is on."""
        limits = counters.get("limits", {}).values()
        self.decided = sum(v["decisions"] for v in limits)
        self.rejected = sum(v["rejections"] for v in limits)
        now = time.monotonic()
        rate = (self.decided - self.last[1]) / (now - self.last[0]) if self.last and now > self.last[0] else 0.0
        self.last = (now, self.decided)
        if self.decided == 0:
            self._show("waiting to start")
        else:
            self._show(f"{rate:,.0f} req/s, {self.decided:,} decided, {self.rejected:,} rejected")

    def done(self, info: dict[str, Any]) -> None:
        """The run's one line: its outcome, what was sent and decided, how long it took."""
        seconds = time.monotonic() - self.run_t0
        if info["status"] in RUN_ANALYSED:
            sent = info.get("sent", 0)
            decided = f"{self.decided:,} decided, " if self.decided != sent else ""  # said when they differ
            what = f"[green]ok[/green]  {sent:,} sent, {decided}{self.rejected:,} rejected, {seconds:.1f} s"
            if info.get("clock_unbounded"):  # remote workers whose offset from the master is uncertain
                workers = ", ".join(map(str, info["clock_unbounded"]))
                what += f"  [yellow]clock offset of remote worker {workers} not bounded below 1 ms[/yellow]"
            if info["status"] == RUN_DEGRADED:
                what = what.replace("[green]ok[/green]", "[yellow]degraded[/yellow]", 1)
                what += f"  [yellow]{'; '.join(info.get('degraded_reasons') or ())}[/yellow]"
            if info.get("degraded"):
                what = what.replace("[green]ok[/green]", "[yellow]ok, degraded[/yellow]", 1)
                what += f"  [yellow]{degraded_line(info['store'], info['degraded'])}[/yellow]"
        else:
            error = (info.get("error") or "").strip().splitlines()
            what = f"[red]{info['status']}[/red] after {seconds:.1f} s" + (f": {error[0]}" if error else "")
        for note in ("redis_restarted", "started_again"):  # the runner's own redis-server died, a late side: said
            if info.get(note):
                what += f"  [yellow]{info[note]}[/yellow]"
        self.out.print(f"{self.label}  {what}", highlight=False)

    def _stop(self) -> None:
        if self.status is not None:
            self.status.stop()
            self.status = None

    def _show(self, text: str) -> None:
        if self.status is not None:
            run_s, campaign_s = time.monotonic() - self.run_t0, time.monotonic() - self.campaign_t0
            line = Text.from_markup(f"{self.label}  [dim]{run_s:4.1f} s[/dim]  {text}  [dim]({campaign_s:.0f} s in all)[/dim]")
            line.truncate(self.out.width - 2, overflow="ellipsis")  # one line beside the spinner, never wrapped
            self.status.update(line)
