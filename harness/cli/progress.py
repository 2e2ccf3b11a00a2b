"""What `run` shows while a live campaign runs: one line per finished run, and on a terminal a
live panel (rich) that follows the current run: its time (elapsed, left), the plan's offered
rate against Locust's achieved one and the target's deciding rate, the target's admitted and
refused counts, the load generator's answers, failures and late sends, P50 and P99 of the last
seconds' answers from the send, and the campaign's progress. Piped or in CI there is no panel:
one line per run, and every PLAIN_EVERY_S of a run a plain line with the same figures."""

from __future__ import annotations

import time
from types import TracebackType
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.panel import Panel
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from contract.run_info import degraded_line
from contract.schema import LATE_S, RUN_ANALYSED, RUN_DEGRADED
from harness.events import RunnerEvents

from .live_line import live_display

PLAIN_EVERY_S = 10.0
"""Piped: a plain progress line this often during a run (a CI log shows a long run is alive)."""
LABEL_WIDTH = len("campaign")


class RunProgress:
    def __init__(self, out: Console) -> None:
        self.out = out
        self.live: Live | None = None
        self.campaign_t0 = self.run_t0 = self.plain_t = time.monotonic()
        self.label = self.state = ""
        self.i = self.n = self.finished = 0
        self.decided = self.rejected = 0
        self.rate = 0.0
        """The target's deciding rate between its last two counters."""
        self.last: tuple[float, int] | None = None
        self.load: dict[str, Any] | None = None
        """The load generator's latest figures (``RunnerEvents.load``), None before the first."""

    def __enter__(self) -> RunProgress:
        self.live = live_display(self.out, self.panel)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._stop()

    @property
    def events(self) -> RunnerEvents[Any]:
        """The runner's hooks that drive this display (any run with a ``name``: a live run, a probe's
        run). The panel goes after the last run: what follows (the analysis) is no run."""
        def run_done(i: int, n: int, run: Any, info: dict[str, Any]) -> None:
            self.done(info)
            if i == n:
                self._stop()

        return RunnerEvents(run_start=lambda i, n, run: self.start(i, n, run.name), counters=self.counters,
                            load=self.loaded, run_done=run_done)

    def start(self, i: int, n: int, name: str) -> None:
        self.i, self.n, self.label, self.state = i, n, f"run {i}/{n} {name}", "starting"
        self.run_t0, self.last, self.decided, self.rejected, self.rate, self.load = time.monotonic(), None, 0, 0, 0.0, None
        self.plain_t = self.run_t0

    def loaded(self, figures: dict[str, Any]) -> None:
        """The load generator's side (harness/live/load_view.py), the runner's every wake."""
        self.load = figures
        now = time.monotonic()
        if self.live is None and now - self.plain_t >= PLAIN_EVERY_S:
            self.plain_t = now
            counted = f"  {self.decided:,} decided, {self.rejected:,} rejected" if self.decided else ""
            self.out.print(f"{self.label}  {now - self.run_t0:.0f} s{counted}  {load_line(figures)}", highlight=False,
                           soft_wrap=True)  # one line in a log, however long

    def counters(self, counters: dict[str, Any]) -> None:
        """The target's counters (``/_bench/counters``), polled by the runner while a run is on."""
        limits = counters.get("limits", {}).values()
        decided = sum(v["decisions"] for v in limits)
        now = time.monotonic()
        self.rate = (decided - self.last[1]) / (now - self.last[0]) if self.last and now > self.last[0] else 0.0
        self.last, self.decided = (now, decided), decided
        self.rejected = sum(v["rejections"] for v in limits)
        self.state = "waiting to start" if decided == 0 else "running"

    def done(self, info: dict[str, Any]) -> None:
        """The run's one line: its outcome, what was sent and decided, how long it took."""
        seconds = time.monotonic() - self.run_t0
        self.finished += 1
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

    def panel(self) -> Panel:
        """The live panel: the current run's figures, the campaign's progress below them."""
        now = time.monotonic()
        rows = Table.grid(padding=(0, 2))
        rows.add_column(style="dim", no_wrap=True, width=LABEL_WIDTH)
        rows.add_column(overflow="fold")
        for name, value in panel_rows(self.load, self.state, now - self.run_t0, self.decided, self.rejected, self.rate):
            rows.add_row(name, value)
        bar = Table.grid(padding=(0, 2))
        bar.add_column(style="dim", no_wrap=True, width=LABEL_WIDTH)
        bar.add_column(width=24, no_wrap=True)
        bar.add_column(overflow="fold")
        bar.add_row("campaign", ProgressBar(total=max(1, self.n), completed=self.finished, width=24),
                    f"{self.finished} of {self.n} runs done, {clock(now - self.campaign_t0)} in all")
        return Panel(Group(rows, bar), title=Text(self.label, style="bold"), title_align="left",
                     width=min(self.out.width, 110))

    def _stop(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None


def panel_rows(load: dict[str, Any] | None, state: str, run_s: float, decided: int, rejected: int,
               rate: float) -> list[tuple[str, str]]:
    """The panel's rows, as (name, figures): before Locust has figures only the run's state."""
    target = (f"{decided:,} decided: {decided - rejected:,} admitted, {rejected:,} refused ({rejected / decided:.1%}); "
              f"deciding {rate:,.0f}/s" if decided else "nothing decided yet")
    if load is None:
        return [("time", f"{run_s:.1f} s, {state}"), ("target", target)]
    achieved = load.get("achieved_rps")
    rows = [("time", f"{load.get('elapsed_s', 0.0):,.1f} s in, {load.get('remaining_s', 0.0):,.0f} s left"),
            ("rate", f"offered {load.get('offered_rps', 0.0):,.0f}/s"
                     + ("" if achieved is None else f", answered {achieved:,.0f}/s (Locust's, seconds behind)")),
            ("target", target)]
    if load.get("requests") is not None:
        late = load.get("late_groups")
        late_said = "" if late is None else f", {late:,.0f} late sends (groups > {LATE_S * 1e3:g} ms past their time)"
        rows.append(("client", f"{load['requests']:,.0f} answers, {load.get('failures') or 0:,.0f} failed{late_said}"))
        rows.append(("latency", f"P50 {_ms(load.get('p50_ms'))} ms, P99 {_ms(load.get('p99_ms'))} ms "
                                "(last seconds, from the send)"))
    return rows


def clock(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``1 h 02 min``."""
    s = int(seconds)
    return f"{s} s" if s < 60 else f"{s // 60} min {s % 60:02d} s" if s < 3600 else f"{s // 3600} h {s // 60 % 60:02d} min"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def load_line(figures: dict[str, Any]) -> str:
    """The load generator's side in one line: offered against achieved, failed, late sends, P50/P99,
    time left."""
    achieved = figures.get("achieved_rps")
    parts = [f"offered {figures.get('offered_rps', 0.0):,.0f}/s"
             + ("" if achieved is None else f", answered {achieved:,.0f}/s (Locust's, seconds behind)")]
    if figures.get("requests") is not None:
        late = figures.get("late_groups")
        parts.append(f"{figures['requests']:,.0f} answers so far, {figures.get('failures') or 0:,.0f} failed"
                     + ("" if late is None else f", {late:,.0f} late sends"))
        parts.append(f"P50 {_ms(figures.get('p50_ms'))} / P99 {_ms(figures.get('p99_ms'))} ms (last seconds, from the send)")
    parts.append(f"{figures.get('remaining_s', 0.0):.0f} s left")
    return "; ".join(parts)
