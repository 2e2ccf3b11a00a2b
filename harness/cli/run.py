"""``run_bench.py run [CAMPAIGN]``: the live campaign, with a progress display and a summary."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, get_args

from rich.console import Console
from rich.table import Table

from analysis.report import build_report
from contract.folder import utc_stamp
from contract.schema import RUN_OK
from harness.campaign.config_file import CampaignError, check_out
from harness.campaign.live import StoreName, load_campaign
from harness.events import RunnerEvents
from harness.live.plan import LiveRun, plan_runs
from harness.live.runner import LiveRunner
from harness.live.supervise import Interrupted

DEFAULT_CAMPAIGN = Path("campaigns/default.yaml")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run a live campaign: real targets, Locust load, results folder")
    p.add_argument("campaign", nargs="?", type=Path, default=DEFAULT_CAMPAIGN, help="campaign YAML (default: %(default)s)")
    p.add_argument("--out", type=Path, help="results folder (default: results/<campaign>-<UTC time>)")
    p.add_argument("--workers", type=int, help="Locust worker processes (overrides the campaign)")
    p.add_argument("--store", choices=list(get_args(StoreName)),
                   help="run on this store only (redis: every redis mode a scenario lists, else the campaign's redis.mode)")
    p.add_argument("--only", action="append", metavar="SCENARIO|ALGORITHM", help="only these scenarios or algorithms")
    p.set_defaults(func=cmd_run)


def cmd_run(args: argparse.Namespace) -> int:
    campaign = load_campaign(args.campaign)
    if args.workers is not None and args.workers < 1:
        raise CampaignError(f"--workers must be at least 1, got {args.workers}")
    runs = plan_runs(campaign, args.only, args.store)
    if not runs:
        raise CampaignError(f"--only {', '.join(args.only or [])}: matches no scenario or algorithm of {args.campaign}")
    out = args.out or Path("results") / f"{campaign.name}-{utc_stamp()}"
    check_out(out)
    console = Console(width=None if sys.stdout.isatty() else 160)
    started = time.monotonic()
    state: dict[str, Any] = {}

    def on_start(i: int, n: int, run: LiveRun) -> None:
        state.update(i=i, n=n, run=run.name, t0=time.monotonic(), last=None)
        console.print(f"[bold]run {i}/{n}[/bold] {run.name}  [dim](campaign {time.monotonic() - started:.0f} s)[/dim]")

    def on_counters(counters: dict[str, Any]) -> None:
        limits = counters.get("limits", {})
        decided = sum(v["decisions"] for v in limits.values())
        rejected = sum(v["rejections"] for v in limits.values())
        now = time.monotonic()
        last = state.get("last")
        if last is not None and now > last[0]:
            rate = (decided - last[1]) / (now - last[0])
            console.print(f"  [dim]{now - state['t0']:5.1f} s  {rate:8.0f} req/s  {decided:7d} decided  "
                          f"{rejected:7d} rejected[/dim]", highlight=False)
        state["last"] = (now, decided)

    def on_done(i: int, n: int, run: LiveRun, info: dict[str, Any]) -> None:
        status = info["status"]
        colour = "green" if status == RUN_OK else "red"
        console.print(f"  [{colour}]{status}[/{colour}] {info.get('sent', 0)} requests sent"
                      + (f"; {info['error'].splitlines()[0]}" if info.get("error") else ""), highlight=False)

    runner = LiveRunner(campaign, out, args.workers, RunnerEvents(run_start=on_start, counters=on_counters, run_done=on_done))
    try:
        results = runner.run_all(runs)
    except Interrupted as exc:
        console.print(f"[red]interrupted ({exc})[/red]: children stopped; finished runs kept in {out}")
        _summarize(out, console)
        return 130
    _summarize(out, console)
    failed = [r for r in results if r["status"] != RUN_OK]
    console.print(f"results: {out}" + (f"  ([red]{len(failed)} failed[/red])" if failed else ""))
    return 0


def _summarize(out: Path, console: Console) -> None:
    """summary.json/csv, charts and the report, from the raw files (the same code as `report`)."""
    report = build_report(out)
    for warning in report.warnings():
        console.print(f"[yellow]warning:[/yellow] {warning}", highlight=False)
    console.print(summary_table(report.rows))


def summary_table(rows: list[dict[str, Any]]) -> Table:
    table = Table(title="live campaign summary")
    cols = [("scenario", "scenario"), ("algorithm", "algorithm"), ("requests", "requests"), ("rejected", "rejected"),
            ("legit rej.", "rejected_legit"), ("over-adm.", "over_admission"), ("P99 ms", "latency_p99_intended_ms"),
            ("target CPU ms/1k", "cpu_target_ms_per_1k"), ("gen.-bound", "generator_bound")]
    for title, _ in cols:
        table.add_column(title, justify="left" if title in ("scenario", "algorithm") else "right")
    for r in rows:
        table.add_row(*[_fmt(r.get(key)) for _, key in cols])
    return table


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.2f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)
