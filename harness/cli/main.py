"""The one CLI: ``run_bench.py list | simulate`` here, the other commands one module each.

Bad input gets one line naming the problem (and the valid choices), exit code 2, nothing written.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from rich.console import Console
from rich.table import Table

from analysis.report import build_report
from analysis.spread import group, with_spread
from contract.atomic import write_text
from contract.errors import BadInput
from contract.folder import partial_path, utc_stamp
from contract.memory import MEMORY_SHARE, machine_bytes
from contract.params import Bounds
from contract.paths import check_output
from contract.schema import KEYS_FILE, REPORT_HTML
from contract.summary import summary_json
from harness.campaign.config_file import CampaignError, check_out, check_repeats
from harness.campaign.log_traffic import LogTraffic
from harness.campaign.peers import PEERS
from harness.campaign.peers.own_file import CONFIG_ITEM, CONFIG_SUMMARY
from harness.campaign.peers.url import URL_ITEM, URL_SUMMARY
from harness.campaign.simulate import load_sim_campaign
from harness.campaign.system import settings_from_pairs
from harness.events import RunnerEvents
from harness.sim.runner import SimPlan, SimRun, execute, make_plan, plan_from_campaign
from scenarios import SCENARIOS
from scenarios.trace_file import REPLAY_BYTES, REQUEST_BYTES, TraceFile, trace_run_name
from targets.algorithms import ALGORITHMS, Policy
from targets.cli_args import EXIT_BAD_INPUT, SEED_BOUNDS, Parser, key_value, number
from targets.stores import STORES

from . import analyze as analysis_cmd
from . import benchmarks, judge, term_table, validate, worker
from . import run as run_cmd
from .head_to_head import head_to_head_table
from .log_options import add_log_options, log_options
from .read_progress import ReadProgress
from .sim_progress import SimProgress
from .summary import show_summary
from .term_table import Column, fit_table

REPLAY_GIB = Bounds(0.5, round(MEMORY_SHARE * machine_bytes() / 2**30, 1))
"""``simulate --replay-memory``: above what a replay holds before its first request (~0.4 GiB:
``scenarios.trace_file.BASE_BYTES``), up to half this machine's memory (``contract.memory``)."""


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="run_bench.py", description="ratelimit-bench: measure rate limiters.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    sub.add_parser("list", help="algorithms, scenarios, stores and peers").set_defaults(func=cmd_list)

    sim = sub.add_parser("simulate", help="replay scenarios through algorithms in virtual time")
    sim.add_argument("--campaign", type=Path, help="a simulation campaign YAML (e.g. campaigns/simulate.yaml)")
    sim.add_argument("--scenario", action="append", default=[], metavar="NAME")
    sim.add_argument("--trace", action="append", default=[], metavar="FILE",
                     help="CSV or Parquet with columns t, key[, cost, client_class, route], or an access log "
                          "(NGINX/Apache, JSON lines, ALB, CloudFront; format detected; .gz too)")
    traced = sim.add_argument_group("--trace LOG: how the access log is read (docs/validate.md)")
    add_log_options(traced, "--trace LOG")
    traced.add_argument("--replay-memory", type=number(float, REPLAY_GIB), default=None, metavar="GIB",
                        help=f"--trace: the most the replay may hold, its analysis workers included (default "
                             f"{REPLAY_BYTES / 2**30:g} GiB; ~{REQUEST_BYTES} bytes a request): a larger trace is refused "
                             "before it is replayed")
    sim.add_argument("--algorithm", action="append", default=[], metavar="NAME", help="repeatable; 'all' (default)")
    sim.add_argument("--limit", type=number(float), default=100.0, help="L: cost units per window (default 100)")
    sim.add_argument("--window", type=number(float), default=60.0, help="W: window in seconds (default 60)")
    sim.add_argument("--burst", type=number(float), default=None, help="explicit burst allowance (default L)")
    sim.add_argument("--param", action="append", type=key_value, default=[], metavar="KEY=VALUE",
                     help="algorithm parameter; ALGORITHM.KEY=VALUE for one algorithm only")
    sim.add_argument("--scenario-param", action="append", type=key_value, default=[], metavar="KEY=VALUE",
                     help="scenario parameter; SCENARIO.KEY=VALUE for one scenario only")
    sim.add_argument("--seed", type=number(int, SEED_BOUNDS), default=None)
    sim.add_argument("--repeats", type=int, metavar="N",
                     help="each run N times at seed offsets 0..N-1 (default: the campaign's repeats, else 1)")
    sim.add_argument("--system", action="append", type=key_value, default=[], metavar="KEY=VALUE",
                     help="the path around the limiter: processes, cpu_us, one_way_us, store, store_rtt_us, slot_overhead_us, "
                          "concurrency, median_ms, sigma (docs/architecture.md: the sim room)")
    sim.add_argument("--json", metavar="PATH|-", help="write the summary as JSON ('-' for stdout)")
    sim.add_argument("--out", type=Path, help="write the results folder here")
    sim.add_argument("--no-charts", action="store_true",
                     help="a campaign's or a trace's report without charts (quicker; run_bench.py report DIR draws them)")
    sim.add_argument("--wide", action="store_true", help="one column per name however wide the terminal (the default when piped)")
    sim.set_defaults(func=cmd_simulate)

    # Further commands register themselves here, one line each: module.register(sub)
    analysis_cmd.register(sub)
    benchmarks.register(sub)
    run_cmd.register(sub)
    validate.register(sub)
    worker.register(sub)
    judge.register(sub)
    return parser


def cmd_list(args: argparse.Namespace) -> int:
    console = Console()
    for title, items in (
        ("algorithms", {n: a.summary for n, a in ALGORITHMS.items()}),
        ("scenarios", {**{n: s.summary for n, s in SCENARIOS.items()}, "--trace FILE": TraceFile.summary}),
        ("stores", STORES),
        ("peers (campaign peers:)", {**{n: p.summary for n, p in PEERS.items()}, URL_ITEM: URL_SUMMARY,
                                      CONFIG_ITEM: CONFIG_SUMMARY}),
    ):
        table = Table(title=title, title_justify="left", show_header=False, box=None)
        table.add_column(no_wrap=True)  # names whole; the descriptions wrap
        table.add_column()
        for name, text in items.items():
            table.add_row(f"[bold]{name}[/bold]", text)
        console.print(table)
        console.print()
    return 0


def cmd_simulate(args: argparse.Namespace) -> int:
    if args.json is not None and args.json != "-":
        check_output(Path(args.json), "--json", folder=False)
    check_repeats(args.repeats)
    log = log_options(args, bool(args.trace), "--trace LOG")
    if args.replay_memory is not None:
        if not args.trace:
            raise CampaignError("--replay-memory: only with --trace")
        log = replace(log, replay_bytes=int(args.replay_memory * 2**30))
    if args.campaign is not None:
        if args.scenario or args.trace or args.algorithm or args.param or args.scenario_param or args.system:
            raise CampaignError("--campaign cannot be combined with --scenario/--trace/--algorithm/--param/--system")
        campaign = load_sim_campaign(args.campaign)
        if args.seed is not None:
            campaign.seed = args.seed
        plan = plan_from_campaign(campaign, args.repeats)
        out = args.out or Path("results") / f"{campaign.name}-{utc_stamp()}"
    else:
        name = trace_name(args.trace) if args.trace and not args.scenario else "simulate"
        plan = make_plan(
            name=name, policy=Policy(args.limit, args.window, args.burst), algorithms=args.algorithm,
            scenarios=args.scenario, traces=args.trace, algorithm_params=args.param,
            scenario_params=args.scenario_param, seed=1 if args.seed is None else args.seed, repeats=args.repeats or 1,
            **dict(zip(("system", "downstream"), settings_from_pairs(args.system))),
            log=log,
        )
        out = args.out or (Path("results") / f"{name}-{utc_stamp()}" if args.trace else None)  # your own traffic: kept
    check_out(out)
    to_stdout = args.json == "-"
    console = term_table.console(stderr=to_stdout, wide=args.wide)
    for line in trace_summaries(plan):
        console.print(line, highlight=False)

    def progress(i: int, n: int, run: SimRun, row: dict) -> None:
        console.print(f"[dim]run {i}/{n}[/dim] {row['scenario']} x {row['algorithm']}: "
                      f"{row['requests']:,} requests in {row['wall_s']:.2f} s", highlight=False)

    try:
        with SimProgress(console) as simulating:
            rows = execute(plan, out, RunnerEvents(run_start=simulating.started, run_done=progress))
    except KeyboardInterrupt:
        if out is not None:
            print(f"interrupted: the whole runs so far are in {partial_path(out)} (run_bench.py report {out} names "
                  "the planned, finished, incomplete and missing runs)", file=sys.stderr)
        raise
    if to_stdout:
        sys.stdout.write(summary_json(rows))
    elif args.json:
        write_text(Path(args.json), summary_json(rows))
    _show(args, plan, out, rows, console)
    return 0


def _show(args: argparse.Namespace, plan: SimPlan, out: Path | None, rows: list[dict], console: Console) -> None:
    """The end of `simulate`: a campaign's report and the summary `run` gives; else the simulation
    table (not when the JSON goes to stdout), and a trace's report."""
    if args.campaign is not None:
        show_summary(build_report(out, charts=not args.no_charts), console, args.wide)
        return
    if args.json != "-":
        console.print(summary_table(group(rows), console, args.wide))
        h2h = head_to_head_table(group(rows), console, args.wide)
        if h2h is not None:
            console.print(h2h)
    if out is not None and any(r.trace for r in plan.runs):  # a trace's folder: its report and who got the 429s
        build_report(out, charts=not args.no_charts)
        console.print(f"report: {out / REPORT_HTML}; per key: {out / KEYS_FILE}", highlight=False)
    elif out is not None and args.json != "-":
        console.print(f"results: {out}")


def trace_summaries(plan: SimPlan) -> list[str]:
    """What each access log replayed was: lines read, used and skipped for each reason."""
    seen: dict[int, str] = {}
    for run in plan.runs:
        traffic = getattr(run.model, "traffic", None)
        if isinstance(traffic, LogTraffic) and traffic.summary is not None and id(traffic) not in seen:
            seen[id(traffic)] = f"{traffic.path}: {traffic.summary.line(traffic.format)}"
    return list(seen.values())


def trace_name(traces: list[str]) -> str:
    """A trace run's campaign and folder name: ``trace-<the first file's name>`` (and how many more)."""
    first = trace_run_name(traces[0]).removeprefix("trace-")
    return f"trace-{first}" + (f"-and-{len(traces) - 1}-more" if len(traces) > 1 else "")


def _times(value: float) -> str:
    return f"{value:.2f}x"


def _over(r: dict) -> str:
    """A rate limiter's over-admission, or a concurrency limiter's peak in flight against its bound
    (the median and its spread when the run was repeated)."""
    if r.get("over_admission") is None:
        ratio = r.get("in_flight_ratio")
        return "-" if ratio is None else with_spread(r, "in_flight_ratio", _times(ratio), _times) + " in flight"
    text = with_spread(r, "over_admission", _times(r["over_admission"]), _times)
    return f"[red]{text}[/red]" if r["over_admission"] > 1.0 + 1e-9 else text


def _count(field: str) -> Callable[[dict], str]:
    return lambda r: with_spread(r, field, f"{r[field]:,.0f}", lambda v: f"{v:,.0f}")


def _share(r: dict, part: str, whole: str) -> str:
    """A count as a share of its whole (``-`` with none: no legitimate request, nothing to refuse)."""
    return "-" if not r.get(whole) else with_spread(r, part, f"{r[part] / r[whole]:.1%}", lambda v: f"{v / r[whole]:.1%}")


SIM_COLUMNS = (
    Column("requests", "req.", _count("requests")),
    Column("admitted", "adm.", _count("admitted")),
    Column("rejected", "rej.", _count("rejected")),
    Column("legit rejected", "legit\nrej.", lambda r: _share(r, "rejected_legit", "legit_requests")),
    Column("over-admission", "over-\nadm.", _over),
    Column("log refused", "log\nrefused", _count("false_admits")),  # admitted where the sliding log refused: a burst too
    Column("log admitted", "log\nadmitted", _count("false_rejects")),  # refused where the sliding log admitted
)
SYSTEM_COLUMNS = (
    Column("P99 ms", "P99\nms", lambda r: _maybe(r.get("latency_p99_intended_ms"), "{:,.0f}")),
    Column("sust./s", "sust.\n/s", lambda r: _maybe(r.get("ramp_sustained_rps"), "{:,.0f}")),
    Column("cores", "target\ncores", lambda r: _maybe(r.get("target_cores"), "{:.1f}")),
    Column("util.", "down.\nutil.", lambda r: _maybe(r.get("downstream_utilisation"), "{:.0%}")),
)


def _maybe(value: float | None, form: str) -> str:
    return "-" if value is None else form.format(value)


def summary_table(rows: list[dict], out: Console, wide: bool = False) -> Table:
    """The system model's columns (P99, a ramp's sustained rate, target cores, downstream
    utilisation) when the rows have them."""
    system = any(r.get("target_cores") is not None for r in rows)
    return fit_table("simulation summary (virtual time, memory store" + ("; latency and CPU from the system model)" if system else ")"),
                     rows, SIM_COLUMNS + (SYSTEM_COLUMNS if system else ()), out, wide=wide)


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error already printed (2)
        return int(exc.code or 0)
    try:
        with ReadProgress(Console(stderr=True)):
            return args.func(args)
    except BadInput as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
