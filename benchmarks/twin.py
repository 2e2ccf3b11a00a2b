"""``run_bench.py bench twin``: live against virtual time, in one invocation. Each campaign runs
live (real targets, Locust) and as its virtual twin (the same entries, policy, algorithms and
downstream through the simulator's system model: harness/sim/system.py), both analysed by the
same report code; per run, P99, admitted, rejected, (a ramp) the sustained rate and (an adaptive
run) its goodput side by side with their ratio virtual / live. Both sides draw the downstream's
service times from one seeded stream (targets/service_times.py), so they are compared on the same
calls, and the model holds each slot the live stack's overhead longer (``bench slot-overhead``).

Default: the default campaign's unhealthy_downstream and campaigns/throughput.yaml (about 12
minutes on 2 cores). ``--only`` and ``--scale`` make a short variant (``--scale 0.25`` runs each
scenario and its phases a quarter as long where it has a ``duration_s``).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from analysis.ramp import BIN_S
from analysis.report import build_report
from benchmarks.args import bench_parser
from contract.folder import utc_stamp
from harness.campaign.live import Campaign, load_campaign
from harness.campaign.simulate import SimCampaign
from harness.campaign.system import SystemSettings
from harness.live.plan import plan_runs
from harness.live.runner import LiveRunner
from harness.sim.runner import execute, plan_from_campaign

DEFAULTS = ((Path("campaigns/default.yaml"), "unhealthy_downstream"), (Path("campaigns/throughput.yaml"), None))
MEASURES = (("P99 ms", "latency_p99_intended_ms"), ("admitted", "admitted"), ("rejected", "rejected"),
            ("sustained /s", "ramp_sustained_rps"), ("goodput /s", "goodput_in_bound_rps"))
"""``goodput /s``: an adaptive run's goodput within the head to head's bound (analysis/adaptive.py)."""
P99_FLOOR_MS = 20.0
"""The goals judge a run whose live P99 exceeds this (below, the Python stack's own latency rules)."""
WITHIN = (("P99", "latency_p99_intended_ms", 0.25), ("admitted", "admitted", 0.02))
"""(name, summary field, how far virtual may be from live) for a run whose live P99 exceeds the floor."""
ADAPTIVE_REJECTED_WITHIN = 0.10


def scaled(campaign: Campaign, only: str | None, scale: float) -> Campaign:
    """The campaign's entries named ``only`` (all: None), each ``duration_s`` and ``*_at_s``
    (its phases) times ``scale``."""
    entries = []
    for entry in campaign.scenarios:
        if only is not None and only not in (entry.name, entry.run_name):
            continue
        params = dict(entry.params)
        for key in [k for k in params if k == "duration_s" or k.endswith("_at_s")]:
            params[key] = float(params[key]) * scale
        entries.append(entry.model_copy(update={"params": params}))
    return campaign.model_copy(update={"scenarios": entries})


def virtual_twin(campaign: Campaign) -> SimCampaign:
    """The same runs in virtual time: entries without what only live runs have, the campaign's
    downstream, its processes per node."""
    entries = [e.model_dump(exclude={"stores", "target", "processes"}, exclude_defaults=True) for e in campaign.scenarios]
    return SimCampaign.model_validate({
        "name": f"{campaign.name}-virtual", "seed": campaign.seed, "policy": campaign.policy.model_dump(),
        "algorithms": campaign.algorithms, "params": campaign.params, "scenarios": entries,
        "downstream": campaign.downstream.model_dump(), "system": SystemSettings(processes=campaign.processes).model_dump()})


def side_by_side(live: Iterable[dict[str, Any]], virtual: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per run both sides have (scenario, algorithm): each measure live, virtual and
    their ratio (None where either side has none or live is 0)."""
    by_run = {(r["scenario"], r["algorithm"]): r for r in virtual}
    rows = []
    for lr in live:
        vr = by_run.get((lr["scenario"], lr["algorithm"]))
        if vr is None:
            continue
        row: dict[str, Any] = {"run": f"{lr['scenario']} x {lr['algorithm']}"}
        for name, key in MEASURES:
            a, b = lr.get(key), vr.get(key)
            row[name] = (a, b, round(b / a, 3) if a and b is not None else None)
        row["goals"] = goals(lr, vr)
        rows.append(row)
    return rows


def goals(live: dict[str, Any], virtual: dict[str, Any]) -> str:
    """The fidelity goals for one run (docs/high-qps.md): ``met``, what missed, or ``-`` where
    none applies. P99 within 25% and admitted within 2% when the live P99 exceeds 20 ms; an
    adaptive run's rejections within 10%; a ramp the live run stopped on P99 (not on late sends:
    the machine's) sustained within one bin of the offered rate. A live run that sent less than
    its plan is judged on its ramp alone."""
    missed: list[str] = []
    judged = False

    def off(key: str) -> float | None:
        a, b = live.get(key), virtual.get(key)
        return None if not a or b is None else b / a - 1

    sent, planned = live.get("requests") or 0, virtual.get("requests") or 0
    whole = sent >= planned
    if not whole:  # the live side stopped before its plan's end: its run totals are of another run
        missed.append(f"live sent {sent / planned:.0%} of the plan")
    if whole and (live.get("latency_p99_intended_ms") or 0) > P99_FLOOR_MS:
        judged = True
        for name, key, within in WITHIN:
            gap = off(key)
            if gap is not None and abs(gap) > within:
                missed.append(f"{name} {gap:+.1%}")
    if whole and live["algorithm"] == "adaptive" and live.get("rejected"):
        judged = True
        gap = off("rejected")
        if gap is not None and abs(gap) > ADAPTIVE_REJECTED_WITHIN:
            missed.append(f"rejected {gap:+.1%} ({live['rejected']:,} / {virtual['rejected']:,})")
    if live.get("ramp_stopped_by") == "p99" and virtual.get("ramp_sustained_rps") is not None:
        judged = True
        p = live.get("scenario_params") or {}
        bin_rps = abs(p["end_rps"] - p["start_rps"]) / p["duration_s"] * (p.get("bin_s") or BIN_S)
        if abs(virtual["ramp_sustained_rps"] - live["ramp_sustained_rps"]) > bin_rps + 1e-9:
            missed.append(f"sustained {virtual['ramp_sustained_rps'] - live['ramp_sustained_rps']:+,.0f}/s")
    return "; ".join(missed) if missed else "met" if judged else "-"


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}" if isinstance(value, float) and value < 100 else f"{value:,.0f}"


def print_table(rows: list[dict[str, Any]], console: Console) -> None:
    table = Table(title="live vs virtual (ratio = virtual / live)")
    table.add_column("run")
    for name, _ in MEASURES:
        table.add_column(f"{name}\nlive / virtual / ratio", justify="right")
    table.add_column("goals")
    for row in rows:
        table.add_row(row["run"], *(" / ".join((_fmt(a), _fmt(b), "-" if r is None else f"{r:.2f}"))
                                    for a, b, r in (row[name] for name, _ in MEASURES)), row["goals"])
    console.print(table)


def twin(path: Path, only: str | None, scale: float, out: Path, console: Console) -> list[dict[str, Any]]:
    campaign = scaled(load_campaign(path), only, scale)
    live_out, virtual_out = out / f"{campaign.name}-live", out / f"{campaign.name}-virtual"
    LiveRunner(campaign, live_out).run_all(plan_runs(campaign, None, "memory"))
    execute(plan_from_campaign(virtual_twin(campaign)), virtual_out)
    rows = side_by_side(build_report(live_out).rows, build_report(virtual_out).rows)
    console.print(f"{path} ({'all' if only is None else only}, x{scale:g}): {live_out} | {virtual_out}")
    print_table(rows, console)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser("twin", __doc__.splitlines()[0])
    parser.add_argument("--campaign", action="append", type=Path, metavar="FILE",
                        help="a live campaign (repeatable; default: default.yaml's unhealthy_downstream and throughput.yaml)")
    parser.add_argument("--only", metavar="SCENARIO", help="only this scenario entry of each campaign")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply each entry's duration_s (a short variant)")
    parser.add_argument("--out", type=Path, default=Path("results") / f"twin-{utc_stamp()}")
    args = parser.parse_args(argv)
    if args.scale <= 0:
        parser.error(f"--scale must be positive, got {args.scale}")
    console = Console()
    pairs = [(p, args.only) for p in args.campaign] if args.campaign else [(p, o) for p, o in DEFAULTS]
    for path, only in pairs:
        twin(path, only, args.scale, args.out, console)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
