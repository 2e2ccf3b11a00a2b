"""What `run` shows while a live campaign runs: one line per finished run, and on a terminal a
status (rich) that follows the current run: its first line the run, its time and the target's
counters (starting, waiting to start, then decided and rejected), its second the load
generator's side once Locust has figures (the plan's offered rate against Locust's achieved
one, failed requests, P50 and P99 of the last seconds' answers from the send, the time left).
Piped or in CI there is no status: one line per run, and every PLAIN_EVERY_S of a run a plain
line with the same figures."""

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

PLAIN_EVERY_S = 10.0
"""Piped: a plain progress line this often during a run (a CI log shows a long run is alive)."""


class RunProgress:
    def __init__(self, out: Console) -> None:
        self.out = out
        self.status: Status | None = None
        self.campaign_t0 = self.run_t0 = self.plain_t = time.monotonic()
        self.label = self.line = ""
        self.decided = self.rejected = 0
        self.last: tuple[float, int] | None = None
        self.load: dict[str, Any] | None = None
        """The load generator's latest figures (``RunnerEvents.load``), None before the first."""

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
                            load=self.loaded, run_done=run_done)

    def start(self, i: int, n: int, name: str) -> None:
        self.label = f"run {i}/{n} {name}"
        self.run_t0, self.last, self.decided, self.rejected, self.load = time.monotonic(), None, 0, 0, None
        self.plain_t = self.run_t0
        self._show("starting")

    def loaded(self, figures: dict[str, Any]) -> None:
        """The load generator's side (harness/live/load_view.py), the runner's every wake."""
        self.load = figures
        self._show(self.line)
        now = time.monotonic()
        if self.status is None and now - self.plain_t >= PLAIN_EVERY_S:
            self.plain_t = now
            counted = f"  {self.decided:,} decided, {self.rejected:,} rejected" if self.decided else ""
            self.out.print(f"{self.label}  {now - self.run_t0:.0f} s{counted}  {load_line(figures)}", highlight=False,
                           soft_wrap=True)  # one line in a log, however long

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
        self.line = text
        if self.status is not None:
            run_s, campaign_s = time.monotonic() - self.run_t0, time.monotonic() - self.campaign_t0
            line = Text.from_markup(f"{self.label}  [dim]{run_s:4.1f} s[/dim]  {text}  [dim]({campaign_s:.0f} s in all)[/dim]")
            line.truncate(self.out.width - 2, overflow="ellipsis")  # one line beside the spinner, never wrapped
            if self.load is not None:
                second = Text(load_line(self.load), style="dim")
                second.truncate(self.out.width - 2, overflow="ellipsis")
                line = Text.assemble(line, "\n", second)
            self.status.update(line)


def load_line(figures: dict[str, Any]) -> str:
    """The load generator's side in one line: offered against achieved, failed, P50/P99, time left."""
    def ms(name: str) -> str:
        value = figures.get(name)
        return "-" if value is None else f"{value:,.0f}"

    achieved = figures.get("achieved_rps")
    parts = [f"offered {figures.get('offered_rps', 0.0):,.0f}/s"
             + ("" if achieved is None else f", answered {achieved:,.0f}/s (Locust's, seconds behind)")]
    if figures.get("requests") is not None:
        parts.append(f"{figures['requests']:,.0f} answers so far, {figures.get('failures') or 0:,.0f} failed")
        parts.append(f"P50 {ms('p50_ms')} / P99 {ms('p99_ms')} ms (last seconds, from the send)")
    parts.append(f"{figures.get('remaining_s', 0.0):.0f} s left")
    return "; ".join(parts)
