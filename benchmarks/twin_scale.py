"""``run_bench.py bench twin-scale``: a live ramp campaign measured on another machine (the 16-core
one: tools/sixteen-cores.sh) against the same campaign in virtual time, per limiter: the sustained
rate and the P99 per offered-rate bin, live / virtual.

Two steps, because the machine that runs the live campaign keeps its logs (millions of rows):
``export RESULTS OUT`` there writes what the comparison needs (summary.json, every ramp run's bins,
campaign.yaml: kilobytes); ``compare OUT`` anywhere runs the twin and prints the table.

The twin of a node of N processes on per-process limiters (the memory store: each process its own
limiter and its own downstream) is one limiter and one downstream of the node's totals (N x the
limit, the burst and the slots) in front of N target processes: exact for the windows' counts
when the kernel spreads the connections evenly, an approximation for adaptive (N limits that each
read their own downstream, modelled as one). Its target processes are FIFO servers of a fixed CPU
per request (``--cpu-us``, default ``bench targets``' figure): they do not model an event loop
whose P99 rises before its core is full, so where live breaks on the target, the twin holds longer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import yaml
from rich.console import Console
from rich.table import Table

from analysis import ramp
from analysis.analyze import CLIENT_MEASURES
from analysis.loader import load_results
from contract.folder import utc_stamp
from contract.params import Bounds
from contract.schema import CAMPAIGN_FILE, SUMMARY_JSON
from harness.campaign.live import Campaign
from harness.campaign.simulate import SimCampaign
from harness.campaign.system import MAX_US, SystemSettings
from harness.sim.runner import execute, plan_from_campaign
from targets.cli_args import number

from .args import bench_parser

BINS_FILE = "bins.csv"
WITHIN = 0.10
"""The goal: the twin's sustained rate within 10% of live's."""
AT = (0.2, 0.4, 0.6, 0.8, 0.9, 1.0)
"""Where on the ramp the table shows each side's P99: these shares of live's top offered rate (the nearest bin)."""
NOT_CAMPAIGN = ("workers", "runs", "machine", "created", "scale_auto")
"""What campaign.yaml holds beyond the campaign file's own fields."""


def export(results: Path, out: Path) -> None:
    """summary.json, campaign.yaml and every ramp run's bins (``analysis.ramp.bins``, with the
    cores each side used in them) into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    frames = []
    for run in load_results(results).runs:
        client = run.client(CLIENT_MEASURES)
        where = ramp.span(run.info)
        if client is None or where is None:
            continue
        _, table = ramp.measures(run.info, client)
        if table is not None:
            cpu = run.cpu()
            if cpu is not None:
                table = table.join(cores(cpu, where[0], ramp.settings(run.info)[1]), on="t")
            frames.append(table.assign(run=run.name, algorithm=run.info.algorithm))
    if frames:
        pd.concat(frames).to_csv(out / BINS_FILE, index=False)
    for name in (SUMMARY_JSON, CAMPAIGN_FILE):
        (out / name).write_bytes((results / name).read_bytes())


def cores(cpu: pd.DataFrame, start_t: float, bin_s: float) -> pd.DataFrame:
    """Per bin of the ramp (``t`` from its start), the cores each role used: every process's mean
    cpu_percent over its samples in the bin, summed over the role's processes, / 100."""
    cpu = cpu.assign(t=((cpu["t"] - start_t) // bin_s) * bin_s)
    per_process = cpu.groupby(["t", "role", "process"])["cpu_percent"].mean()
    by_role = per_process.groupby(["t", "role"]).sum().unstack("role").fillna(0.0) / 100.0
    return by_role.rename(columns=lambda role: f"{role}_cores")


def node_twin(campaign: Campaign, cpu_us: float | None) -> SimCampaign:
    """The campaign in virtual time, a node of N per-process limiters as one of the node's totals."""
    n = campaign.processes
    policy = campaign.policy.model_dump()
    policy.update(limit=policy["limit"] * n, burst=None if policy.get("burst") is None else policy["burst"] * n)
    downstream = {**campaign.downstream.model_dump(), "concurrency": campaign.downstream.concurrency * n}
    entries = [e.model_dump(exclude={"stores", "target", "processes"}, exclude_defaults=True) for e in campaign.scenarios]
    return SimCampaign.model_validate({
        "name": f"{campaign.name}-virtual", "seed": campaign.seed, "policy": policy, "algorithms": campaign.algorithms,
        "params": campaign.params, "scenarios": entries, "downstream": downstream,
        "system": SystemSettings(processes=n, cpu_us=cpu_us).model_dump()})


def rows(live: Path, virtual: Path) -> list[dict[str, Any]]:
    """Per algorithm: the sustained rate and what stopped it, each side, and the P99 at AT_RPS."""
    summaries = {side: {r["algorithm"]: r for r in json.loads((d / SUMMARY_JSON).read_text())["runs"]}
                 for side, d in (("live", live), ("virtual", virtual))}
    bins = {side: pd.read_csv(d / BINS_FILE) for side, d in (("live", live), ("virtual", virtual))}
    top = float(bins["live"]["offered_rps"].max())
    at = [round(top * share, -2) for share in AT]
    out = []
    for algorithm, lr in summaries["live"].items():
        vr = summaries["virtual"].get(algorithm)
        if vr is None:
            continue
        a, b = lr.get("ramp_sustained_rps"), vr.get("ramp_sustained_rps")
        row = {"algorithm": algorithm, "live": a, "live_stop": lr.get("ramp_stopped_by"), "virtual": b,
               "virtual_stop": vr.get("ramp_stopped_by"), "ratio": round(b / a, 3) if a and b is not None else None}
        row["goal"] = ("- (live stopped on late sends: the generator's)" if row["live_stop"] == "late" else "-"
                       if row["ratio"] is None else "met" if abs(row["ratio"] - 1) <= WITHIN else "missed")
        row["at_rps"] = at
        live_bins = bins["live"][bins["live"]["algorithm"] == algorithm]
        row["live_p99_only"] = p99_only(live_bins, lr.get("ramp_p99_bound_ms") or ramp.P99_BOUND_MS)
        if row["live_stop"] == "late" and row["live_p99_only"] and b is not None:  # the generator's stop: judge on P99
            ratio = b / row["live_p99_only"]
            row["goal"] = f"{'met' if abs(ratio - 1) <= WITHIN else 'missed'} on P99 alone ({ratio:.2f}; live stopped on late sends)"
        row["cores"] = tuple(float(live_bins[c].max()) if c in live_bins else None
                             for c in ("generator_cores", "target_cores"))
        for side in ("live", "virtual"):
            mine = bins[side][bins[side]["algorithm"] == algorithm]
            row[f"p99_{side}"] = [_nearest(mine, rps) for rps in at]
        out.append(row)
    return out


def p99_only(table: pd.DataFrame, bound_ms: float) -> float | None:
    """The sustained rate by P99 alone (late sends not counted): a run the generator stopped still
    says where its side's P99 passed the bound."""
    if table.empty:
        return None
    best = 0.0
    for row in table.sort_values("offered_rps", kind="stable").itertuples():
        if row.p99_ms > bound_ms:
            return best
        best = float(row.offered_rps)
    return best


def _nearest(table: pd.DataFrame, rps: float) -> float | None:
    if table.empty:
        return None
    row = table.iloc[(table["offered_rps"] - rps).abs().argmin()]
    return None if pd.isna(row["p99_ms"]) else float(row["p99_ms"])


def print_table(found: list[dict[str, Any]], console: Console) -> None:
    table = Table(title=f"live vs virtual: sustained rate (P99 under its bound; goal: within {WITHIN:.0%}) and P99 by offered rate")
    for name in ("algorithm", "sustained /s live (stop)", "virtual (stop)", "virtual / live", "goal",
                 "live cores, most: generator / target"):
        table.add_column(name, justify="left" if name in ("algorithm", "goal") else "right")
    at = found[0]["at_rps"] if found else []
    table.add_column("P99 ms at " + " / ".join(f"{r:,.0f}" for r in at) + " offered /s: live | virtual")
    for r in found:
        p99 = " / ".join(_ms(v) for v in r["p99_live"]) + " | " + " / ".join(_ms(v) for v in r["p99_virtual"])
        table.add_row(r["algorithm"], f"{_rate(r['live'])} ({r['live_stop'] or 'top'}; P99 alone {_rate(r['live_p99_only'])})",
                      f"{_rate(r['virtual'])} ({r['virtual_stop'] or 'top'})",
                      "-" if r["ratio"] is None else f"{r['ratio']:.2f}", r["goal"],
                      " / ".join("-" if c is None else f"{c:.1f}" for c in r["cores"]), p99)
    console.print(table)


def _rate(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}"


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}"


def compare(live: Path, out: Path, cpu_us: float | None, console: Console) -> list[dict[str, Any]]:
    config = yaml.safe_load((live / CAMPAIGN_FILE).read_text(encoding="utf-8"))
    campaign = Campaign.model_validate({k: v for k, v in config.items() if k not in NOT_CAMPAIGN})
    virtual = out / f"{campaign.name}-virtual"
    execute(plan_from_campaign(node_twin(campaign, cpu_us)), virtual)
    export(virtual, virtual / "export")
    found = rows(live, virtual / "export")
    console.print(f"live: {live} ({campaign.processes} processes a node, {config.get('workers')} Locust workers) | "
                  f"virtual: {virtual}")
    print_table(found, console)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser("twin-scale", __doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="step", required=True)
    ex = sub.add_parser("export", help="on the machine that ran the campaign: what the comparison needs")
    ex.add_argument("results", type=Path)
    ex.add_argument("out", type=Path)
    cmp = sub.add_parser("compare", help="the exported live figures against the campaign in virtual time")
    cmp.add_argument("live", type=Path, help="a folder written by export")
    cmp.add_argument("--cpu-us", type=number(float, Bounds(0.1, MAX_US)),
                     help="the target's CPU per request in the twin (default: bench targets')")
    cmp.add_argument("--out", type=Path, default=Path("results") / f"twin-scale-{utc_stamp()}")
    args = parser.parse_args(argv)
    if args.step == "export":
        if not (args.results / SUMMARY_JSON).is_file():
            parser.error(f"{args.results}: not a results folder with its {SUMMARY_JSON} (run_bench.py report writes it)")
        export(args.results, args.out)
    else:
        missing = [n for n in (SUMMARY_JSON, BINS_FILE, CAMPAIGN_FILE) if not (args.live / n).is_file()]
        if missing:
            parser.error(f"{args.live}: no {', '.join(missing)}: not a folder written by `bench twin-scale export`")
        compare(args.live, args.out, args.cpu_us, Console(width=max(Console().width, 200)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
