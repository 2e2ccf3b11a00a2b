"""``run_bench.py bench slot-overhead``: what the live stack adds to every downstream call, the
figure the system model's default ``slot_overhead_us`` comes from (harness/sim/target_model.py).

``campaigns/slot-overhead.yaml`` runs live: a downstream of 8 slots x 10 ms exactly, always
queued (a concurrency limit of 40 keeps 32 calls waiting and refuses the rest at once). While a
queue waits, the slots drain at ``8 / (10 ms + overhead)``: the overhead is what a call holds its
slot beyond its service time (the sleep's timer, the event loop's hops to wake the caller and hand
the slot on). The same campaign then runs in virtual time twice, as a pure queue and with the
model's default, and the table gives the three drain rates side by side with the overhead each
implies (the pure queue's is 0 by construction, its check).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from rich.console import Console
from rich.table import Table

from benchmarks.args import bench_parser
from contract.folder import utc_stamp
from contract.schema import CLIENT_FILE
from harness.campaign.live import Campaign, load_campaign
from harness.campaign.system import SystemSettings
from harness.live.plan import plan_runs
from harness.live.runner import LiveRunner
from harness.sim.runner import execute, plan_from_campaign
from harness.sim.target_model import SLOT_OVERHEAD_US

from .twin import virtual_twin

CAMPAIGN = Path("campaigns/slot-overhead.yaml")
SETTLE_S = 1.0
"""The drain is counted from this long after the first send (the queue is full by then) to the last."""


def drain_rate(client: pd.DataFrame, settle_s: float = SETTLE_S) -> float | None:
    """Answers (200) per second while the queue waits: from ``settle_s`` after the first intended
    send to the last one (None: nothing answered in that span)."""
    plan = client[client["role"] == "plan"] if "role" in client else client
    start, end = float(plan["intended_t"].min()) + settle_s, float(plan["intended_t"].max())
    done = plan.loc[plan["status"] == 200, "done_t"].to_numpy(dtype=np.float64)
    inside = int(((done >= start) & (done <= end)).sum())
    return inside / (end - start) if inside and end > start else None


def overhead_us(rate: float | None, slots: int, service_s: float) -> float | None:
    """The time per call beyond ``service_s`` that drains ``slots`` at ``rate``."""
    return None if not rate else (slots / rate - service_s) * 1e6


def drains(folder: Path) -> dict[str, float | None]:
    """Each run's drain rate, by run directory."""
    return {d.name: drain_rate(pd.read_parquet(d / CLIENT_FILE)) for d in sorted((folder / "runs").iterdir())
            if (d / CLIENT_FILE).exists()}


def virtual(campaign: Campaign, overhead: float, out: Path) -> dict[str, float | None]:
    """The campaign's virtual twin with ``overhead`` us per call."""
    twin = virtual_twin(campaign)
    twin = twin.model_copy(update={"system": SystemSettings(processes=campaign.processes, slot_overhead_us=overhead)})
    execute(plan_from_campaign(twin), out)
    return drains(out)


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser("slot-overhead", __doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("results") / f"slot-overhead-{utc_stamp()}")
    args = parser.parse_args(argv)
    campaign = load_campaign(CAMPAIGN)
    slots, service_s = campaign.downstream.concurrency, campaign.downstream.median_ms / 1000.0
    LiveRunner(campaign, args.out / "live").run_all(plan_runs(campaign, None, "memory"))
    live = drains(args.out / "live")
    pure = virtual(campaign, 0.0, args.out / "virtual-pure-queue")
    model = virtual(campaign, SLOT_OVERHEAD_US, args.out / "virtual")
    table = Table(title=f"a downstream of {slots} x {service_s * 1000:g} ms, always queued: drain /s (overhead us per call)")
    table.add_column("run")
    for name in ("live", "virtual, pure queue", f"virtual, default {SLOT_OVERHEAD_US:,.0f} us"):
        table.add_column(name, justify="right")
    table.add_column("model / live", justify="right")
    for run, rate in live.items():
        cells = []
        for r in (rate, pure.get(run), model.get(run)):
            us = overhead_us(r, slots, service_s)
            cells.append("-" if r is None or us is None else f"{r:,.1f} ({us:,.0f})")
        ratio = model.get(run) / rate if rate and model.get(run) else None
        table.add_row(run.split("__")[0], *cells, "-" if ratio is None else f"{ratio:.3f}")
    Console().print(table)
    print(f"results: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
