"""``run_bench.py bench distributed``: what Locust's distributed path costs per request.

In one run, against the ``none`` target with no downstream, a steady open-model plan at a few
offered rates, replayed twice: by 2 local Locust workers (``--processes 2``, the plan read from
the run folder) and by 1 remote worker (``run_bench.py worker`` as its own process tree,
connecting over TCP on 127.0.0.1 as from another machine: the plan, the clock pings and the
client log over the Locust connection). The generator's CPU per request is the master's plus
its workers' (psutil, the measured window only); the ratio remote / local is the price of the
remote path (the goal: at most 1.10). Late groups, the send lag p99 and the remote worker's
clock bound are printed beside it."""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from rich.console import Console
from rich.table import Table

from benchmarks.args import REQUESTS, bench_parser
from contract.params import Bounds
from contract.schema import CPU_COLUMNS, ROLE_GENERATOR
from harness.live.cpu_sampler import CpuSampler
from harness.live.measures import measured_window
from harness.live.plan import plan_runs
from harness.live.remote import RemoteWorkers
from harness.live.runner import ROOT, LiveRunner
from harness.processes.ports import free_ports
from harness.processes.spawn import spawn
from targets.cli_args import number

from .live import NO_DOWNSTREAM, _campaign, _cpu, steady_scenario

RATES = (500, 1000, 1500)
GOAL_RATIO = 1.10


@dataclass(frozen=True)
class Cost:
    offered: int
    requests: int
    generator_s: float
    late_share: float
    lag_p99_ms: float
    clock_bound_ms: float | None = None
    error: str | None = None
    """A run that failed (a loaded machine can starve Locust): its row says so, the others stand."""

    @property
    def us_per_request(self) -> float:
        return self.generator_s / max(1, self.requests) * 1e6 if self.error is None else float("nan")


def _steady(offered: int, seconds: float, workers: int) -> tuple[Any, Any]:
    campaign = _campaign(steady_scenario(seconds), offered / 100, workers, NO_DOWNSTREAM)
    return campaign, plan_runs(campaign)[0]


def _cost(offered: int, info: dict[str, Any], generator_s: float) -> Cost:
    if info["status"] != "ok":
        return Cost(offered, 0, 0.0, float("nan"), float("nan"), error=(info.get("error") or "failed").splitlines()[0])
    bounds = [w["bound_ms"] for w in info.get("remote_workers", [])]
    return Cost(offered, info["sent"], generator_s, info.get("late_share", 0.0),
                (info.get("send_lag_ms") or {}).get("p99") or float("nan"), max(bounds) if bounds else None)


def _local(root: Path, offered: int, seconds: float) -> Cost:
    campaign, run = _steady(offered, seconds, 2)
    runner = LiveRunner(campaign, root)
    try:
        info = runner.execute(run)
    finally:
        runner.close()
    _, generator_s = _cpu(pd.read_csv(root / "runs" / run.name / "cpu.csv"), ROLE_GENERATOR)
    return _cost(offered, info, generator_s)


def _remote(root: Path, offered: int, seconds: float, port: int, worker_pid: int, last: bool) -> Cost:
    """The master's CPU from the run's cpu.csv, the remote worker's sampled here (the runner
    does not see another machine's processes)."""
    campaign, run = _steady(offered, seconds, 1)
    runner = LiveRunner(campaign, root, remote=RemoteWorkers(1, "127.0.0.1", port, 60.0))
    runner.last_run = run.name if last else None
    sampler = CpuSampler()
    sampler.watch("remote-worker", ROLE_GENERATOR, worker_pid)
    sampler.start()
    try:
        info = runner.execute(run)
    finally:
        runner.close()
        rows = sampler.stop()
    _, master_s = _cpu(pd.read_csv(root / "runs" / run.name / "cpu.csv"), ROLE_GENERATOR)
    worker = pd.DataFrame(measured_window(rows, info, sampler.interval_s), columns=CPU_COLUMNS)
    _, worker_s = _cpu(worker, ROLE_GENERATOR)
    return _cost(offered, info, master_s + worker_s)


def _cells(cost: Cost) -> list[str]:
    if cost.error:
        return [f"failed: {cost.error[:40]}", "", ""]
    return [f"{cost.us_per_request:.0f}", f"{cost.late_share:.1%}", f"{cost.lag_p99_ms:.2f}"]


def _table(pairs: list[tuple[Cost, Cost]], seconds: float) -> Table:
    table = Table(title=f"generator CPU per request: 2 local workers vs 1 remote worker over loopback "
                        f"(the `none` target, no downstream, {seconds:g} s runs)")
    for name in ("offered/s", "local us/req", "local late", "local lag p99 ms", "remote us/req", "remote late",
                 "remote lag p99 ms", "clock bound ms", "remote / local"):
        table.add_column(name, justify="right")
    for local, remote in pairs:
        bound = f"{remote.clock_bound_ms:.3f}" if remote.clock_bound_ms is not None else "-"
        ratio = "-" if local.error or remote.error else f"{remote.us_per_request / local.us_per_request:.2f}"
        table.add_row(f"{local.offered:,}", *_cells(local), *_cells(remote), bound, ratio)
    return table


def run_distributed_bench(console: Console, seconds: float, rates: tuple[int, ...]) -> list[tuple[Cost, Cost]]:
    with tempfile.TemporaryDirectory(prefix="bench-distributed-") as tmp:
        root = Path(tmp)
        local = [_local(root / f"local-{rate}", rate, seconds) for rate in rates]
        (port,) = free_ports(1)
        machine = root / "remote-machine"
        machine.mkdir()
        worker = spawn([sys.executable, str(ROOT / "run_bench.py"), "worker", "--master", f"127.0.0.1:{port}",
                        "--give-up", "60", "--dir", str(machine)], cwd=machine,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            remote = [_remote(root / f"remote-{rate}", rate, seconds, port, worker.pid, rate == rates[-1]) for rate in rates]
            worker.wait(30)
        finally:
            if worker.poll() is None:
                worker.terminate()
                worker.wait(10)
    pairs = list(zip(local, remote))
    console.print(_table(pairs, seconds))
    ratios = [r.us_per_request / lo.us_per_request for lo, r in pairs if not (lo.error or r.error)]
    if not ratios:
        console.print("[red]no rate ran on both paths[/red]")
        return pairs
    ratio = statistics.median(ratios)
    verdict = "[green]within[/green]" if ratio <= GOAL_RATIO else "[red]above[/red]"
    console.print(f"median remote / local: {ratio:.2f} ({verdict} the goal of {GOAL_RATIO:.2f})")
    return pairs


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser("distributed", __doc__.splitlines()[0])
    parser.add_argument("--seconds", type=number(float, Bounds(0.1, 60)), default=3.0, help="length of each steady run (default 3)")
    parser.add_argument("--rates", type=number(int, Bounds(1, REQUESTS.high // 60)), nargs="+", default=list(RATES),
                        help="offered rates, requests/s (a minute of each within the memory bound)")
    args = parser.parse_args(argv)
    run_distributed_bench(Console(), args.seconds, tuple(args.rates))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
