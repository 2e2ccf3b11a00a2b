"""``run_bench.py run [CAMPAIGN]``: the live campaign, with a progress display and a summary."""

from __future__ import annotations

import argparse
import signal
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any, get_args

from rich.console import Console
from rich.table import Table

from analysis import promises
from analysis.palette import rich_markup
from analysis.report import build_report
from analysis.spread import with_spread
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
from .head_to_head import head_to_head_table
from .progress import RunProgress
from .term_table import Column, fit_table

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
            _summarize(out, console, args.wide)
        return 130
    _summarize(out, console, args.wide)
    failed = [r for r in results if r["status"] not in RUN_ANALYSED]
    degraded = [r for r in results if r["status"] == RUN_DEGRADED]
    console.print(f"results: {out}" + (f"  ([red]{len(failed)} failed[/red])" if failed else "")
                  + (f"  ([yellow]{len(degraded)} degraded[/yellow])" if degraded else ""))
    return degraded_exit(degraded, args.allow_degraded)


def degraded_exit(degraded: list[dict], allowed: bool) -> int:
    """1 when a run is degraded (its figures are not its limiter's), unless ``--allow-degraded``."""
    return 1 if degraded and not allowed else 0


def _summarize(out: Path, console: Console, wide: bool) -> None:
    """summary.json/csv, charts and the report, from the raw files (the same code as `report`)."""
    report = build_report(out, on_chart=lambda i, n, name: console.print(f"[dim]chart {i}/{n}: {name}[/dim]", highlight=False))
    for warning in report.warnings():
        console.print(f"[yellow]warning:[/yellow] {warning}", highlight=False)
    console.print(summary_table(report.groups, console, wide))
    h2h = head_to_head_table(report.groups, console, wide)
    if h2h is not None:
        console.print(h2h)
    for answer in report.answers():  # the report's opening sentences, algorithm names in their chart colours
        console.print(rich_markup(answer.line()), highlight=False)


def _cell(key: str) -> Callable[[dict[str, Any]], str]:
    """The figure, with its spread (low-high) when the run was repeated."""
    def cell(row: dict[str, Any]) -> str:
        value = row.get(key)
        if value is None or isinstance(value, bool):
            return _fmt(value)
        return with_spread(row, key, _fmt(value), (lambda v: f"{v:,.0f}") if isinstance(value, int) else _fmt)

    return cell


BELOW = "< res."
"""The marginal CPU per request where the run cannot resolve it (docs/analysis.md, "CPU")."""
LIVE_COLUMNS = (
    Column("requests", "req.", _cell("requests")),
    Column("rejected", "rej.", _cell("rejected")),
    Column("legit rej.", "legit\nrej.", _cell("rejected_legit")),
    Column("over-adm.", "over-\nadm.", _cell("over_admission")),
    Column("in flight", "in\nflight", _cell("in_flight_ratio")),
    Column("P99 ms", "P99\nms", _cell("latency_p99_intended_ms")),
    Column("target CPU ms/1k", "target\nCPU ms\n/1k req.", _cell("cpu_target_ms_per_1k")),
    Column("µs/req", "marg.\nCPU µs\n/req", lambda row: BELOW if row.get("cpu_target_us_per_req") is None
           and row.get("cpu_target_ms_per_1k") is not None else _cell("cpu_target_us_per_req")(row)),
    Column("gen.-bound", "gen.\nbound", _cell("generator_bound")),
)


RAMP_COLUMN = Column("sustained /s", "sust.\n/s",
                     lambda row: "-" if row.get("ramp_sustained_rps") is None else f"{row['ramp_sustained_rps']:,.0f}")
"""Only when a ramp ran: the highest offered rate with P99 under its bound and nothing late or failed."""
FIELDS_COLUMN = Column("fields kept", "fields\nkept", lambda row: promises.text(row, short=True) or "-")
"""Only when some answer carried limit fields: the promises kept of those checked, Retry-After, remaining
and reset (analysis.promises.text),
after the limit's own columns (before latency and CPU: a narrow terminal crops the last ones)."""
FIELDS_AT = 5


def summary_table(rows: list[dict[str, Any]], out: Console, wide: bool = False) -> Table:
    ramp = any(r.get("ramp_sustained_rps") is not None for r in rows)
    fields = [FIELDS_COLUMN] if any(r.get("limit_fields_form") for r in rows) else []
    columns = (*LIVE_COLUMNS[:FIELDS_AT], *fields, *LIVE_COLUMNS[FIELDS_AT:], *([RAMP_COLUMN] if ramp else []))
    return fit_table("live campaign summary", rows, columns, out, wide=wide)


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)
