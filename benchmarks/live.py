"""``run_bench.py bench live``: the load generator's honest ceiling, and how tight a burst lands.

In one run, against the ``none`` target (no limiting: the cheapest request the suite serves),
first with no downstream (``--service-ms 0``: the target's own ceiling), then behind a simulated
downstream (32 slots x 20 ms: a ceiling near 1,600/s that is the downstream's, not the
generator's):
- wrk (C, event loop, closed loop) as the reference for what the target can serve;
- the suite's replay (``PlanUser``, the raw replay engine) of a steady open-model plan at rising
  offered rates, with 1 and 2 Locust workers: achieved rate, late groups, send lag p99, and the
  generator's CPU per request (psutil on the Locust processes: while the plan is sent, and over
  the whole measured window with its edges); a rate is replayed cleanly when
  fewer than 1% of groups are late and the send lag p99 is under 2 ms. The highest clean rate per
  worker count is printed beside wrk's;
- bursts of 100 and 1,000 simultaneous requests (1 worker, 6 bursts each), on shared cores and
  with each side on its own (``scale.pin``), and 1,000 against a 2-process target: how spread
  they landed at the target (first to last arrival, ms; the goals: 10 ms and 50 ms in the worst
  burst), how spread the target's decisions were (one process decides them in turn) and the
  send lag.
The steady runs and wrk share every core unless ``--pin`` (then wrk runs on the generator's
cores, its target on the targets'). The tables print both sides' CPU."""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from rich.console import Console
from rich.table import Table

from benchmarks.args import bench_parser
from harness.campaign.live import Campaign
from harness.live import cpus
from harness.live.cpus import CpuSplit
from harness.live.plan import plan_runs
from harness.live.runner import LiveRunner
from harness.processes.target import TargetProcess, running_target

WRK_SECONDS = 5
NO_DOWNSTREAM_RPS = (1000, 2000, 4000, 6000, 8000, 10000, 11000, 12000)
DOWNSTREAM_RPS = (500, 1000, 1500)
CLEAN_LATE_SHARE = 0.01
CLEAN_LAG_P99_MS = 2.0
DOWNSTREAM = {"concurrency": 32, "median_ms": 20.0, "sigma": 0.5}
NO_DOWNSTREAM = {"median_ms": 0.0}


@dataclass(frozen=True)
class Rate:
    """One steady run: what was offered, achieved, and what it cost the generator."""

    workers: int
    offered: int
    achieved: float
    late_share: float
    lag_p99_ms: float
    generator_cpu: float
    us_sending: float
    """Generator CPU per request over the samples taken while the plan was being sent."""
    us_per_request: float
    """The same over the whole measured window (its edges too: warm-up's end, drain, log write)."""
    target_cpu: float

    @property
    def clean(self) -> bool:
        return self.late_share < CLEAN_LATE_SHARE and self.lag_p99_ms < CLEAN_LAG_P99_MS


def _campaign(scenario: dict[str, Any], limit: float, workers: int, downstream: dict[str, float],
              processes: int = 1, pin: bool = False) -> Campaign:
    return Campaign.model_validate({
        "name": "bench-live", "policy": {"limit": limit, "window_s": 1}, "algorithms": ["none"], "processes": processes,
        "scenarios": [scenario], "downstream": downstream,
        "scale": {"workers": workers, "lead_s": 2.5, "drain_s": 1.0, "pin": pin},
    })


def _live(root: Path, scenario: dict[str, Any], limit: float, workers: int, downstream: dict[str, float],
          processes: int = 1, pin: bool = False) -> tuple[dict[str, Any], Path]:
    campaign = _campaign(scenario, limit, workers, downstream, processes, pin)
    run = plan_runs(campaign)[0]
    runner = LiveRunner(campaign, root)
    try:
        info = runner.execute(run)
    finally:
        runner.close()
    if info["status"] != "ok":
        raise RuntimeError(f"bench run {run.name} failed: {info.get('error')}")
    return info, root / "runs" / run.name


def _per_sample(cpu: pd.DataFrame, role: str) -> tuple[pd.Series, float]:
    """A role's CPU % per sample (its processes summed) and the sampling interval (s; 0.5 when
    there is a single sample)."""
    per_sample = cpu[cpu["role"] == role].groupby("t")["cpu_percent"].sum()
    return per_sample, float(np.median(np.diff(per_sample.index.to_numpy()))) if len(per_sample) > 1 else 0.5


def _cpu(cpu: pd.DataFrame, role: str) -> tuple[float, float]:
    """Median CPU % of a role (its processes summed per sample) and its CPU seconds in the window."""
    per_sample, interval_s = _per_sample(cpu, role)
    if not len(per_sample):
        return float("nan"), float("nan")
    return float(per_sample.median()), float(per_sample.sum()) / 100.0 * interval_s


def _sending_us(cpu: pd.DataFrame, client: pd.DataFrame, role: str) -> float:
    """CPU microseconds per request over the samples whose whole interval lies between the first
    and the last send (a sample's CPU % covers the interval before it), over the requests sent
    in those intervals: the cost of a request without the fixed costs at a run's edges."""
    per_sample, interval = _per_sample(cpu, role)
    if len(per_sample) < 2:
        return math.nan
    ts = per_sample.index.to_numpy()
    inside = (ts - interval >= client["sent_t"].min()) & (ts <= client["sent_t"].max())
    if not inside.any():
        return math.nan
    start, end = ts[inside][0] - interval, ts[inside][-1]
    sent = int(((client["sent_t"] > start) & (client["sent_t"] <= end)).sum())
    return float(per_sample[inside].sum()) / 100.0 * interval / max(1, sent) * 1e6


def steady_scenario(seconds: float) -> dict[str, Any]:
    """The open-model plan every rate is measured with: 100 clients, each at the limit (L = offered / 100)."""
    return {"name": "steady", "params": {"clients": 100, "load": 1.0, "duration_s": seconds}}


def _steady(root: Path, offered: int, workers: int, seconds: float, downstream: dict[str, float], pin: bool) -> Rate:
    info, run_dir = _live(root, steady_scenario(seconds), offered / 100, workers, downstream, pin=pin)
    client = pd.read_parquet(run_dir / "client.parquet", filters=[("role", "==", "plan")])  # the warm-up is not the load
    answered = client[client["status"] > 0]
    span = answered["done_t"].max() - answered["sent_t"].min()
    cpu = pd.read_csv(run_dir / "cpu.csv")
    generator, generator_s = _cpu(cpu, "generator")
    target, _ = _cpu(cpu, "target")
    return Rate(workers, offered, len(answered) / span, info.get("late_share", 0.0),
                (info.get("send_lag_ms") or {}).get("p99") or math.nan, generator,
                _sending_us(cpu, client, "generator"), generator_s / max(1, len(client)) * 1e6, target)


def _wrk(target: TargetProcess, cores: CpuSplit | None) -> tuple[float, str]:
    """wrk against a running target, each on its side's cores as the suite's runs are."""
    if shutil.which("wrk") is None:
        return float("nan"), "wrk not installed (apt-get install wrk)"
    if cores:
        cpus.pin(target.pid, cores.targets)
    cmd = ["wrk", "-t1", "-c50", f"-d{WRK_SECONDS}s", f"{target.url}/api/items"]
    # wrk starts its thread at once: its cores are set before it runs (this process has no other threads yet)
    pin_self = (lambda: os.sched_setaffinity(0, cores.generator)) if cores else None
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=WRK_SECONDS + 30, preexec_fn=pin_self).stdout
    match = re.search(r"Requests/sec:\s+([\d.]+)", out)
    return (float(match.group(1)) if match else float("nan")), "wrk -t1 -c50 (closed loop)"


def _ladder(root: Path, rates: tuple[int, ...], workers: tuple[int, ...], seconds: float,
            downstream: dict[str, float], pin: bool) -> list[Rate]:
    """Rising offered rates per worker count, up to the second rate in a row not replayed
    cleanly (one can be the shared machine's noise)."""
    out = []
    for n in workers:
        unclean = 0
        for offered in rates:
            rate = _steady(root / f"rate-{n}-{offered}", offered, n, seconds, downstream, pin)
            out.append(rate)
            unclean = 0 if rate.clean else unclean + 1
            if unclean == 2:
                break
    return out


def _rates_table(title: str, wrk: tuple[float, str], rates: list[Rate]) -> Table:
    table = Table(title=title)
    for col in ("generator", "offered/s", "achieved/s", "late groups", "send lag p99 ms", "generator CPU %",
                "generator CPU us/request: sending (whole run)", "target CPU %", "clean"):
        table.add_column(col, justify="left" if col == "generator" else "right")
    table.add_row(wrk[1], "-", f"{wrk[0]:,.0f}", "-", "-", "-", "-", "-", "-")
    for r in rates:
        table.add_row(f"ratelimit-bench, {r.workers} Locust worker{'s' * (r.workers > 1)}", f"{r.offered:,}",
                      f"{r.achieved:,.0f}", f"{r.late_share:.1%}", f"{r.lag_p99_ms:.1f}", f"{r.generator_cpu:.0f}",
                      f"{r.us_sending:.0f} ({r.us_per_request:.0f})", f"{r.target_cpu:.0f}", "yes" if r.clean else "no")
    return table


def _ceilings(rates: list[Rate], wrk_rps: float) -> str:
    lines = []
    for n in sorted({r.workers for r in rates}):
        clean = [r for r in rates if r.workers == n and r.clean]
        if not clean:
            lines.append(f"{n} worker(s): no offered rate replayed cleanly")
            continue
        best = max(clean, key=lambda r: r.offered)
        share = f" = {best.achieved / wrk_rps:.0%} of wrk's {wrk_rps:,.0f}/s" if math.isfinite(wrk_rps) else ""
        lines.append(f"{n} worker(s): highest clean offered rate {best.offered:,}/s (achieved {best.achieved:,.0f}/s{share})")
    return "\n".join(lines)


def _median_max(spread: dict[str, float]) -> str:
    return f"{spread.get('median', float('nan')):.1f} ({spread.get('max', float('nan')):.1f})"


def _bursts(root: Path, cores: CpuSplit | None) -> Table:
    bursts = Table(title="burst precision: N requests released at one deadline, 6 bursts a run (1 Locust worker, no downstream)")
    for col in ("burst", "target processes", "cores", "goal: worst within ms", "landed within ms: median (max)",
                "decided within ms: median (max)", "send lag p50 ms", "send lag max ms"):
        bursts.add_column(col, justify="right")
    pins = (False, True) if cores else (False,)  # pinned: the same bursts with each side on its own cores
    shapes = [(100, 1, pin) for pin in pins] + [(1000, 1, pin) for pin in pins] + [(1000, 2, False)]
    for size, processes, pin in shapes:
        # 3 boundaries: 6 bursts a run; the first meets a cold target, the median shows the rest
        burst = {"name": "boundary_burst", "params": {"instant": 1, "boundaries": 3, "size": size, "delta_s": 0.5}}
        info, _ = _live(root / f"burst-{size}-{processes}-{pin}", burst, size, 1, NO_DOWNSTREAM, processes, pin)
        landed, decided = info.get("burst_spread_ms") or {}, info.get("burst_decision_spread_ms") or {}
        lag = info.get("send_lag_ms") or {}
        bursts.add_row(f"{size:,}", f"{processes}", "pinned" if pin else "shared", "10" if size <= 100 else "50",
                       _median_max(landed), _median_max(decided),
                       f"{lag.get('p50', float('nan')):.1f}", f"{lag.get('max', float('nan')):.1f}")
    return bursts


def run_live_bench(console: Console, seconds: float = 3.0, pin: bool = False) -> None:
    cores = cpus.split(cpus.available())
    ladder_cores = cores if pin else None
    console.print(f"steady runs and wrk: targets on cores {list(cores.targets)}, the generator on {list(cores.generator)}"
                  if ladder_cores else "steady runs and wrk: every side may run on every core (shared)")
    with tempfile.TemporaryDirectory(prefix="bench-live-") as tmp:
        root = Path(tmp)
        with running_target(["--algorithm", "none", "--service-ms", "0"], log_dir=root / "wrk-bare") as target:
            wrk_bare = _wrk(target, ladder_cores)
        bare = _ladder(root / "bare", NO_DOWNSTREAM_RPS, (1, 2), seconds, NO_DOWNSTREAM, pin)
        console.print(_rates_table(f"the `none` target, no downstream ({seconds:.0f} s open-model runs)", wrk_bare, bare))
        console.print(_ceilings(bare, wrk_bare[0]))
        slow = ["--concurrency", str(DOWNSTREAM["concurrency"]), "--service-ms", str(DOWNSTREAM["median_ms"]),
                "--service-sigma", str(DOWNSTREAM["sigma"])]
        with running_target(["--algorithm", "none", *slow], log_dir=root / "wrk-down") as target:
            wrk_down = _wrk(target, ladder_cores)
        behind = _ladder(root / "downstream", DOWNSTREAM_RPS, (1,), seconds, DOWNSTREAM, pin)
        console.print(_rates_table("the `none` target behind a downstream of 32 slots x 20 ms (its ceiling ~1,600/s)",
                                   wrk_down, behind))
        console.print(_ceilings(behind, wrk_down[0]))
        console.print(_bursts(root, cores))


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser("live", __doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="length of each steady run (default 3)")
    parser.add_argument("--pin", action="store_true",
                        help="steady runs and wrk with each side on its own cores (scale.pin); bursts run both ways")
    args = parser.parse_args(argv)
    if not 0 < args.seconds <= 60:
        parser.error(f"--seconds must be in (0, 60], got {args.seconds}")
    run_live_bench(Console(), args.seconds, args.pin)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
