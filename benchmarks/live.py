"""``run_bench.py bench live``: how hard can this machine push a target, and how tight is a burst?

In one run, against the ``none`` target (no limiting: the cheapest request the suite serves):
- wrk (C, event loop) as the reference for what the target can serve;
- the suite's own Locust replay at an offered rate far above what either side can do, with 1 and
  with 2 Locust workers: the achieved rate is the suite's ceiling here;
- bursts of 100 and 1,000 simultaneous requests: how spread they landed at the target (first to
  last arrival, ms; the goal is 10 ms for 100), how spread the target's decisions were (one
  process decides them in turn) and the send lag behind the deadline.
On 2 cores the generator and the target share the machine; the table prints both CPUs."""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
from rich.console import Console
from rich.table import Table

from harness.campaign.live import Campaign
from harness.live.plan import plan_runs
from harness.live.runner import LiveRunner
from targets.process import running_target

WRK_SECONDS = 5
OFFERED_RPS = (250, 500, 1000, 2000)
SATURATED_LATE_SHARE = 0.5


def _campaign(scenario: dict[str, Any], limit: float, workers: int) -> Campaign:
    return Campaign.model_validate({
        "name": "bench-live", "policy": {"limit": limit, "window_s": 1}, "algorithms": ["none"],
        "scenarios": [scenario], "scale": {"workers": workers, "lead_s": 2.5, "drain_s": 1.0},
    })


def _live(root: Path, scenario: dict[str, Any], limit: float, workers: int) -> tuple[dict[str, Any], Path]:
    campaign = _campaign(scenario, limit, workers)
    run = plan_runs(campaign)[0]
    info = LiveRunner(campaign, root).execute(run)
    if info["status"] != "ok":
        raise RuntimeError(f"bench run {run.name} failed: {info.get('error')}")
    return info, root / "runs" / run.name


def _cpu(run_dir: Path, info: dict[str, Any], role: str) -> float:
    cpu = pd.read_csv(run_dir / "cpu.csv")
    cpu = cpu[(cpu["t"] >= info["start_at"]) & (cpu["t"] <= info["end_at"]) & (cpu["role"] == role)]
    return float(cpu.groupby("t")["cpu_percent"].sum().median()) if len(cpu) else float("nan")


def _wrk(url: str) -> tuple[float, str]:
    if shutil.which("wrk") is None:
        return float("nan"), "wrk not installed (apt-get install wrk)"
    out = subprocess.run(["wrk", "-t1", "-c50", f"-d{WRK_SECONDS}s", "--latency", f"{url}/api/items"],
                         capture_output=True, text=True, timeout=WRK_SECONDS + 30).stdout
    match = re.search(r"Requests/sec:\s+([\d.]+)", out)
    return (float(match.group(1)) if match else float("nan")), "wrk -t1 -c50"


def _median_max(spread: dict[str, float]) -> str:
    return f"{spread.get('median', float('nan')):.1f} ({spread.get('max', float('nan')):.1f})"


def run_live_bench(console: Console, seconds: float = 4.0) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-live-") as tmp:
        root = Path(tmp)
        rates = Table(title=f"request rate against the `none` target (2 cores shared; {seconds:.0f} s open-model runs)")
        for col in ("generator", "requests/s", "generator CPU %", "target CPU %", "late groups"):
            rates.add_column(col, justify="left" if col == "generator" else "right")
        with running_target(["--algorithm", "none"], log_dir=root / "wrk") as target:
            wrk_rps, how = _wrk(target.url)
        rates.add_row(how, f"{wrk_rps:,.0f}", "-", "-", "-")
        for workers in (1, 2):
            for offered in OFFERED_RPS:
                steady = {"name": "steady", "params": {"clients": 100, "load": 1.0, "duration_s": seconds}}
                info, run_dir = _live(root / f"rate-{workers}-{offered}", steady, offered / 100, workers)
                answered = pd.read_parquet(run_dir / "client.parquet")
                answered = answered[answered["status"] > 0]
                span = answered["done_t"].max() - answered["sent_t"].min()
                rates.add_row(f"ratelimit-bench, {workers} Locust worker{'s' * (workers > 1)}, offered {offered:,}/s",
                              f"{len(answered) / span:,.0f}", f"{_cpu(run_dir, info, 'generator'):.0f}",
                              f"{_cpu(run_dir, info, 'target'):.0f}", f"{info.get('late_share', 0):.0%}")
                if info.get("late_share", 0) > SATURATED_LATE_SHARE:
                    break  # this many workers cannot keep up: a higher offer only measures the pile-up
        console.print(rates)

        bursts = Table(title="burst precision: N requests released at one deadline, 6 bursts a run (1 Locust worker)")
        for col in ("burst", "landed within ms: median (max)", "decided within ms: median (max)", "send lag p50 ms",
                    "send lag max ms"):
            bursts.add_column(col, justify="right")
        for size in (100, 1000):
            # 3 boundaries: 6 bursts a run; the first meets a cold target, the median shows the rest
            burst = {"name": "boundary_burst", "params": {"instant": 1, "boundaries": 3, "size": size, "delta_s": 0.5}}
            info, _ = _live(root / f"burst-{size}", burst, size, 1)
            landed, decided = info.get("burst_spread_ms") or {}, info.get("burst_decision_spread_ms") or {}
            lag = info.get("send_lag_ms") or {}
            bursts.add_row(f"{size:,}", _median_max(landed), _median_max(decided), f"{lag.get('p50', float('nan')):.1f}",
                           f"{lag.get('max', float('nan')):.1f}")
        console.print(bursts)


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(prog="run_bench.py bench live", description=__doc__.splitlines()[0]).parse_args(argv)
    run_live_bench(Console())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
