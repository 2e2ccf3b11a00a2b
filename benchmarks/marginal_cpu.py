"""``run_bench.py bench marginal-cpu``: the marginal CPU per request the report gives a live run,
beside what ``bench targets`` measures per request, per algorithm, in one invocation.

Live: ``campaigns/cpu.yaml`` (every algorithm under a ramp its limit never reaches, no downstream
wait) through the live runner, then the report: per run, the slope of the target's CPU against
the requests it decided over the CPU sampler's bins (analysis/cpu.py), with its 95% interval,
and the whole-process figure beside it. Then each algorithm's target as ``bench targets`` drives
it (wrk, keep-alive connections, the same never-rejecting policy): CPU time over requests served
at saturation, where the idle process weighs nothing. The ratio of the two is the check
(docs/analysis.md, "CPU": within ``GOAL`` of each other).
"""

from __future__ import annotations

import argparse
import shutil
import signal
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from analysis.report import build_report
from benchmarks.args import bench_parser
from contract.folder import utc_stamp
from harness.campaign.live import load_campaign
from harness.live.plan import plan_runs
from harness.live.runner import LiveRunner
from harness.processes.target import running_target

from .targets import NEVER_REJECT, measure

GOAL = 0.20
"""The marginal figure of a live run within this share of ``bench targets``' figure."""
CAMPAIGN = Path("campaigns/cpu.yaml")


def live_rows(campaign: Path, only: list[str], out: Path) -> dict[str, dict[str, Any]]:
    """The campaign's runs (``only`` these algorithms), reported: each algorithm's summary row."""
    loaded = load_campaign(campaign)
    LiveRunner(loaded, out).run_all(plan_runs(loaded, only or None, "memory"))
    return {r["algorithm"]: r for r in build_report(out).rows}


def wrk_us(algorithms: list[str], args: argparse.Namespace) -> dict[str, float]:
    """Each target's CPU µs per request under wrk (``bench targets``' measurement), the median of
    ``--rounds`` rounds, the algorithms interleaved within a round."""
    samples: dict[str, list[float]] = {a: [] for a in algorithms}
    with tempfile.TemporaryDirectory(prefix="marginal-cpu-") as tmp:
        for r in range(args.rounds):
            for i, name in enumerate(algorithms):
                argv = ["--algorithm", name, *NEVER_REJECT, "--decision-log", str(Path(tmp) / f"{i}-{r}.parquet")]
                with running_target(argv, log_dir=Path(tmp)) as target:
                    samples[name].append(measure(target.pid, f"{target.url}/api/items", args).cpu_us)
                print(f"round {r + 1}/{args.rounds} {name:24s} {samples[name][-1]:6.1f} us CPU/request (wrk)", file=sys.stderr)
    return {a: statistics.median(v) for a, v in samples.items()}


def _us(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


def side_by_side(live: dict[str, dict[str, Any]], wrk: dict[str, float]) -> Table:
    table = Table(title=f"target CPU per request: a live run's marginal figure vs bench targets (goal: within {GOAL:.0%})")
    for header in ("algorithm", "live marginal\nus/req (95% CI)", "live whole\nprocess us/req", "live idle\nms/s",
                   "bench targets\nus/req (wrk)", "marginal /\nbench targets", "within\ngoal"):
        table.add_column(header, justify="left" if header in ("algorithm", "within\ngoal") else "right")
    for name, us in wrk.items():
        row = live.get(name, {})
        marginal, whole = row.get("cpu_target_us_per_req"), row.get("cpu_target_ms_per_1k")
        ratio = None if marginal is None else marginal / us
        interval = "below resolution" if marginal is None else \
            f"{marginal:,.1f} ({row['cpu_target_us_per_req_low']:,.1f}-{row['cpu_target_us_per_req_high']:,.1f})"
        table.add_row(name, interval, _us(whole), _us(row.get("cpu_target_idle_ms_per_s")), f"{us:,.1f}",
                      "-" if ratio is None else f"{ratio:.2f}", "-" if ratio is None else "yes" if abs(ratio - 1) <= GOAL else "no")
    return table


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser("marginal-cpu", __doc__.splitlines()[0])
    parser.add_argument("--campaign", type=Path, default=CAMPAIGN, help=f"the live campaign (default {CAMPAIGN})")
    parser.add_argument("--only", action="append", default=[], metavar="ALGORITHM", help="repeatable; default: the campaign's")
    parser.add_argument("--out", type=Path, default=None, help="the live results folder (default results/cpu-<UTC time>)")
    parser.add_argument("--rounds", type=int, default=1, help="wrk rounds per target (bench targets' default: 3)")
    parser.add_argument("--seconds", type=int, default=4, help="wrk's measured seconds per target per round")
    parser.add_argument("--warmup", type=int, default=1, help="wrk's unmeasured seconds before each measurement")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1, help="wrk threads")
    args = parser.parse_args(argv)
    for name in ("rounds", "seconds", "connections", "threads"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1, got {getattr(args, name)}")
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))  # unwinds: targets stopped
    if shutil.which("wrk") is None:
        print("error: wrk is not installed (apt-get install -y wrk); this benchmark needs it", file=sys.stderr)
        return 2
    out = args.out or Path("results") / f"cpu-{utc_stamp()}"
    live = live_rows(args.campaign, args.only, out)
    wrk = wrk_us(list(live), args)
    console = Console()
    console.print(f"live runs: {out} (report.html)")
    console.print(side_by_side(live, wrk))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
