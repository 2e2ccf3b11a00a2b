"""``run_bench.py run [CAMPAIGN]``: the live campaign, with a progress display and a summary."""

from __future__ import annotations

import argparse
import signal
from contextlib import suppress
from pathlib import Path
from typing import get_args

from rich.console import Console

from analysis.report import build_report
from contract.folder import utc_stamp
from contract.params import Bounds
from contract.schema import RUN_ANALYSED, RUN_DEGRADED
from harness.campaign.config_file import CampaignError, check_out, check_repeats
from harness.campaign.live import StoreName, load_campaign
from harness.live import autoscale, cpus
from harness.live.plan import plan_runs
from harness.live.preflight import preflight
from harness.live.remote import DEFAULT_PORT, DEFAULT_TIMEOUT_S, RemoteWorkers, parse_address
from harness.live.runner import LiveRunner
from harness.live.supervise import Interrupted
from targets.cli_args import number

from . import term_table
from .progress import RunProgress
from .summary import show_summary

DEFAULT_CAMPAIGN = Path("campaigns/default.yaml")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run a live campaign: real targets, Locust load, results folder")
    p.add_argument("campaign", nargs="?", type=Path, default=DEFAULT_CAMPAIGN, help="campaign YAML (default: %(default)s)")
    p.add_argument("--out", type=Path, help="results folder (default: results/<campaign>-<UTC time>)")
    p.add_argument("--workers", type=number(int, Bounds(1, 64)), help="Locust worker processes (overrides the campaign)")
    p.add_argument("--store", choices=list(get_args(StoreName)),
                   help="run on this store only (redis: every redis mode a scenario lists, else the campaign's redis.mode)")
    p.add_argument("--only", action="append", metavar="SCENARIO|ALGORITHM", help="only these scenarios or algorithms")
    p.add_argument("--remote-workers", type=number(int, Bounds(1, 1_000)), metavar="N",
                   help="N Locust workers on other machines (run_bench.py worker --master HOST:PORT) instead of local ones")
    p.add_argument("--master-bind", default=f"0.0.0.0:{DEFAULT_PORT}", metavar="HOST:PORT",
                   help="where every run's master listens for the remote workers (default: %(default)s)")
    p.add_argument("--remote-timeout", type=number(float, Bounds(0.001, 86_400)), default=DEFAULT_TIMEOUT_S, metavar="S",
                   help="each run waits this long for its remote workers, else it fails saying how many came (default: %(default)g s)")
    p.add_argument("--repeats", type=int, metavar="N",
                   help="each run N times at seed offsets 0..N-1 (overrides the campaign's repeats)")
    p.add_argument("--allow-degraded", action="store_true",
                   help="exit 0 even when a run is degraded (exploratory runs; a degraded run exits 1 otherwise)")
    p.add_argument("--no-charts", action="store_true",
                   help="summary and report without charts (quicker; run_bench.py report DIR draws them later)")
    p.add_argument("--wide", action="store_true", help="one column per name however wide the terminal (the default when piped)")
    p.set_defaults(func=cmd_run)


def cmd_run(args: argparse.Namespace) -> int:
    campaign = load_campaign(args.campaign)
    preflight(campaign, str(args.campaign))  # the machine and the network, once, before anything starts
    if args.workers is not None and args.workers < 1:
        raise CampaignError(f"--workers must be at least 1, got {args.workers}")
    remote = None
    if args.remote_workers is not None:
        if args.workers is not None:
            raise CampaignError("--workers and --remote-workers exclude each other: a run's workers are local or remote")
        remote = RemoteWorkers(args.remote_workers, *parse_address(args.master_bind, "--master-bind"), args.remote_timeout)
    check_repeats(args.repeats)
    console = term_table.console(wide=args.wide)
    chosen = None
    if campaign.scale.auto:
        campaign, choice = autoscale.apply(campaign, len(cpus.available()))
        console.print(choice.said(), highlight=False)
        chosen = choice.as_json()
    runs = plan_runs(campaign, args.only, args.store, args.repeats)
    if not runs:
        names = dict.fromkeys([n for sc in campaign.scenarios for n in (sc.name, sc.run_name)]
                              + [a for sc in campaign.scenarios for a in campaign.algorithms_for(sc)])
        raise CampaignError(f"--only {', '.join(args.only or [])}: matches no scenario or algorithm of {args.campaign}; "
                            f"choose from: {', '.join(names)}")
    out = args.out or Path("results") / f"{campaign.name}-{utc_stamp()}"
    check_out(out)
    progress = RunProgress(console)
    runner = LiveRunner(campaign, out, args.workers, progress.events, remote, scale_auto=chosen)
    try:
        with progress:
            results = runner.run_all(runs)
    except Interrupted as exc:
        console.print(f"[red]interrupted ({exc})[/red]: children stopped; finished runs kept in {out}")
        # every run is recorded by now: a further signal only cuts the summary short (its files are written atomically)
        signal.signal(signal.SIGTERM, signal.default_int_handler)
        with suppress(KeyboardInterrupt):
            _summarize(out, console, args.wide, not args.no_charts)
        return 130
    _summarize(out, console, args.wide, not args.no_charts)
    failed = [r for r in results if r["status"] not in RUN_ANALYSED]
    degraded = [r for r in results if r["status"] == RUN_DEGRADED]
    console.print(f"results: {out}" + (f"  ([red]{len(failed)} failed[/red])" if failed else "")
                  + (f"  ([yellow]{len(degraded)} degraded[/yellow])" if degraded else ""))
    return degraded_exit(degraded, args.allow_degraded)


def degraded_exit(degraded: list[dict], allowed: bool) -> int:
    """1 when a run is degraded (its figures are not its limiter's), unless ``--allow-degraded``."""
    return 1 if degraded and not allowed else 0


def _summarize(out: Path, console: Console, wide: bool, charts: bool) -> None:
    """summary.json/csv, charts and the report, from the raw files (the same code as `report`),
    then the summary `report` prints."""
    report = build_report(out, on_chart=lambda i, n, name: console.print(f"[dim]chart {i}/{n}: {name}[/dim]", highlight=False),
                          charts=charts)
    show_summary(report, console, wide)
