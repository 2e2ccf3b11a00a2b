"""What a live run measures beyond the raw logs, for run.json: how well the plan was kept
(send lag, burst spread, the CPU samples of the measured window) and, for multi-node and
store-failure runs, what the fleet enforced.

- ``fleet``: the limit the fleet really enforced on the key under test (the skewed client of
  ``multi_node``, else the busiest key): its max admitted cost in any window W, against the
  advertised L; before and after a node joins (autoscale), and the decisions per node.
- ``store_failure``: requests and admissions while the store was down against the fallback
  limit, decisions by source, answers that were not a decision (errors, no answer), and the time
  from the restart to the first shared decision again.
- ``degraded``: any run (not only a store failure's) in which some decisions came from a fallback
  (the decision log's ``source``): their share, their sources and the time span they cover, so
  the run's metrics are never taken for the store's.
- ``failed_requests`` and ``degraded_reasons``: what makes a completed run ``degraded``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from analysis.latency import nearest_rank
from analysis.metrics import max_window_cost
from contract.schema import (
    DECISIONS_FILE,
    HEALTH_PHASES,
    OVERLOAD_PHASE,
    RAMP_PHASE,
    STATUS_TOO_MANY,
)
from scenarios.base import TrafficModel
from scenarios.live_plan import LivePlan, group_ranges
from scenarios.multi_node import SKEWED

FALLBACK_SOURCES = ("fallback", "fail_closed")
"""Decision sources that are not the run's store deciding (targets/stores/redis/failover.py)."""

ANSWERS = (200, 201, 429)
"""A status that is a decision; anything else (5xx, 0 = no answer) is an error shown to a client."""


def _worst(admitted: pd.DataFrame, window_s: float) -> float:
    """Max admitted cost in any window over the keys of ``admitted`` (sorted by t)."""
    if admitted.empty:
        return 0.0
    return max(max_window_cost(g["t"].to_numpy(), g["cost"].to_numpy(), window_s) for _, g in admitted.groupby("key"))


def fleet_measures(decisions: pd.DataFrame, limit: float, window_s: float, joins_at: list[float],
                   routing: str) -> dict[str, Any]:
    """``joins_at``: epoch seconds each node starts taking traffic."""
    df = decisions.sort_values("t", kind="stable")
    key = SKEWED if (df["key"] == SKEWED).any() else (df.groupby("key")["cost"].sum().idxmax() if len(df) else None)
    admitted = df[df["allowed"] & (df["key"] == key)]
    enforced = _worst(admitted, window_s)
    out: dict[str, Any] = {
        "nodes": len(joins_at), "routing": routing, "key": key, "advertised_limit": limit,
        "enforced_limit": enforced, "enforced_ratio": round(enforced / limit, 4),
        "decisions_by_node": {str(k): int(v) for k, v in df.groupby("node").size().items()},
    }
    join = max(joins_at, default=0.0)
    if join > min(joins_at, default=0.0):
        before, after = admitted[admitted["t"] < join], admitted[admitted["t"] >= join]
        out["autoscale"] = {"join_t": join, "enforced_before": _worst(before, window_s),
                            "enforced_after": _worst(after, window_s)}
    return out


def store_failure_measures(decisions: pd.DataFrame, client: pd.DataFrame, start_t: float, end_t: float,
                           fallback_limit: float, window_s: float) -> dict[str, Any]:
    """``fallback_limit``: the local limit per node while Redis is down."""
    df = decisions.sort_values("t", kind="stable")
    down = df[(df["t"] >= start_t) & (df["t"] < end_t)]
    after = df[(df["t"] >= end_t) & (df["source"] == "redis")]
    fallback = down[down["allowed"] & (down["source"] == "fallback")]
    per_node = [_worst(g, window_s) for _, g in fallback.groupby("node")]
    status = client["status"].to_numpy()
    return {
        "outage": {"start_t": start_t, "end_t": end_t, "duration_s": round(end_t - start_t, 3)},
        "requests_during_outage": len(down),
        "admitted_during_outage": int(down["allowed"].sum()),
        "fallback_limit_per_node": fallback_limit,
        "fallback_max_window_per_node": max(per_node, default=0.0),
        "sources_during_outage": {str(k): int(v) for k, v in down.groupby("source").size().items()},
        "client_errors": int((~np.isin(status, ANSWERS)).sum()),
        "unanswered": int((status == 0).sum()),
        "recovery_s": round(float(after["t"].iloc[0]) - end_t, 3) if len(after) else None,
    }


def store_degradation(decisions: pd.DataFrame) -> dict[str, Any] | None:
    """The share of decisions a fallback made, by source, and the span from the first to the last
    of them (epoch seconds); None when the store made every decision."""
    if "source" not in decisions.columns or not len(decisions):
        return None
    fell = decisions[decisions["source"].isin(FALLBACK_SOURCES)]
    if not len(fell):
        return None
    return {"share": round(len(fell) / len(decisions), 6), "decisions": len(fell), "of": len(decisions),
            "sources": {str(k): int(v) for k, v in fell.groupby("source").size().items()},
            "start_t": float(fell["t"].min()), "end_t": float(fell["t"].max())}


def failed_requests(client: pd.DataFrame, phases: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The plan's requests (``client``: intended_t, status) left unanswered (status 0) or answered
    neither 2xx nor 429, sent outside the run's phases (each a departure from health the scenario
    asked for: a downstream's outage answers 503 on purpose); None when there were none."""
    t, status = client["intended_t"].to_numpy(), client["status"].to_numpy()
    inside = np.zeros(len(t), dtype=bool)
    for p in phases:
        inside |= (t >= p["start_t"]) & (t < p["end_t"])
    failed = status[~inside & ~(((status >= 200) & (status < 300)) | (status == STATUS_TOO_MANY))]
    if not len(failed):
        return None
    values, counts = np.unique(failed, return_counts=True)
    return {"count": len(failed), "of": len(client), "share": round(len(failed) / len(client), 6),
            "statuses": {str(int(v)): int(c) for v, c in zip(values, counts)}}


def degraded_reasons(record: dict[str, Any], outage_planned: bool) -> list[str]:
    """Why a completed run is degraded, each with its share: decisions from a fallback (unless the
    scenario stopped the store on purpose: then the fallback is what it measures, ``store_failure``)
    and failed requests."""
    reasons = []
    fell, failed = record.get("degraded"), record.get("failed_requests")
    if fell and not outage_planned:
        reasons.append(f"{fell['share']:.1%} of its decisions came from a fallback, not {record['store']}")
    if failed:
        statuses = ", ".join(f"{'no answer' if s == '0' else s} {n:,}" for s, n in failed["statuses"].items())
        reasons.append(f"{failed['count']:,} of {failed['of']:,} requests ({failed['share']:.1%}) failed: {statuses}")
    return reasons


def measured_window(rows: list[tuple], info: dict[str, Any], interval_s: float) -> list[tuple]:
    """The samples of the measured window (plan start to end, one sample either side): start-up
    (imports, warm-up) is not what a run measures. A run that failed early keeps everything."""
    if "start_at" not in info or "end_at" not in info:
        return rows
    first, last = info["start_at"] - interval_s, info["end_at"] + interval_s
    return [r for r in rows if first <= r[0] <= last]


def pct_ms(values: np.ndarray, q: float) -> float | None:
    value = nearest_rank(values[np.isfinite(values)], q)
    return None if value is None else round(value * 1000.0, 3)


def burst_spread(run_dir: Path, plan: LivePlan) -> dict[str, Any]:
    """For every planned group of 10+ simultaneous requests, first to last in ms: when they
    reached the target (``burst_spread_ms``: how tightly the burst landed) and when the target
    decided them (``burst_decision_spread_ms``: one target process decides them one after the
    other, so this adds its per-request work). Read against the send lag of the client log."""
    big = [g for g in group_ranges(plan.arrivals().t, plan.burst_gap_s) if len(g) >= 10]
    if not big:
        return {}
    decisions = pq.read_table(run_dir / DECISIONS_FILE, columns=["t", "arrived_t", "request_id"]).to_pandas()
    first = decisions.groupby("request_id")[["t", "arrived_t"]].min()
    spreads: dict[str, list[float]] = {"arrived_t": [], "t": []}
    for g in big:
        rows = first.reindex([f"r{i}" for i in g])  # arrival i's request id (live_plan.worker_share)
        for column, values in spreads.items():
            ts = rows[column].dropna()
            if len(ts) > 1:
                values.append((ts.max() - ts.min()) * 1000.0)
    if not spreads["t"]:
        return {}

    def summary(values: list[float]) -> dict[str, float] | None:
        return {"median": round(float(np.median(values)), 3), "max": round(float(np.max(values)), 3)} if values else None

    return {"burst_groups": len(spreads["t"]), "burst_size": max(len(g) for g in big),
            "burst_spread_ms": summary(spreads["arrived_t"]), "burst_decision_spread_ms": summary(spreads["t"])}


def model_phases(model: TrafficModel, start_at: float, end_at: float) -> list[dict[str, Any]]:
    """The phases of run.json a model's plan implies, in epoch seconds: every unhealthy phase of
    its downstream's health schedule (``HEALTH_PHASES``), a ramp's span (the offered rate's time
    axis) and an overload break's window (the offered rate over capacity)."""
    schedule = (model.target_config().get("downstream") or {}).get("schedule") or []
    phases = []
    for phase, following in zip(schedule, [*schedule[1:], None]):
        if phase["health"] in HEALTH_PHASES:
            end = end_at if following is None else start_at + following["at_s"]
            phases.append({"name": HEALTH_PHASES[phase["health"]], "start_t": start_at + phase["at_s"], "end_t": end})
    for name, span in ((RAMP_PHASE, model.ramp()), (OVERLOAD_PHASE, model.overload_window())):
        if span is not None:
            phases.append({"name": name, "start_t": start_at + span[0], "end_t": start_at + span[1]})
    return phases
