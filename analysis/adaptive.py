"""The adaptive head to head (docs/scenarios.md, "Adaptive rules"): how an adaptive limiter's
limit follows a downstream that breaks, from the decision log's ``adaptive_limit`` column, the
client log and the run's break window. Pure functions over arrays, so each is checked on
hand-computed series.

- goodput: requests admitted AND served (2xx) within ``bound_s`` of their intended send, per
  second of the run (a 200 after the client gave up is no good to it);
- time to react: from the break until the limit settles (stays within ``SETTLE_BAND`` of the
  level it holds at the end of the break) for the rest of the break;
- time to recover: the same from the recovery to the run's end;
- collapse: a limit that ended on its floor, at most COLLAPSE of its peak, and stayed there: the
  time it fell there for good and the floor (a finding: the rule stopped admitting and never
  probed back up);
- oscillation: coefficient of variation of the limit in the healthy steady state (the second
  half of the time before the break: the first half is the rule's start-up probe).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from contract.run_info import RunInfo
from contract.schema import GATEWAY_LIMIT, HEALTH_PHASES, OVERLOAD_PHASE

from .labels import gateway_text

GOODPUT_BOUND_S = 0.5
"""A client's patience: an answer later than this from the intended send is not goodput."""
COLLAPSE = 0.25
"""Collapsed: the limit ended at this share of its highest value or below, on its floor."""
SETTLE_BAND = 0.1
"""Settled: within +-10% of the settled level (the median of the window's last quarter)."""
BREAK_PHASES = (*HEALTH_PHASES.values(), OVERLOAD_PHASE)
"""run.json phases that mark the downstream's change (every unhealthy health, and an overload
break's window, which leaves the downstream healthy); the earliest is the break."""
EMPTY = {"goodput_in_bound_rps": None, "limit_react_s": None, "limit_recover_s": None, "limit_cov": None,
         "limit_mean": None, "limit_collapsed_s": None, "limit_floor": None}


def goodput_in_bound(intended_t: np.ndarray, done_t: np.ndarray, status: np.ndarray, span_s: float,
                     bound_s: float = GOODPUT_BOUND_S) -> float | None:
    """Answers that were 2xx and back within ``bound_s`` of the intended send, per second of ``span_s``."""
    if span_s <= 0:
        return None
    late = np.asarray(done_t, dtype=np.float64) - np.asarray(intended_t, dtype=np.float64)
    status = np.asarray(status)
    good = (status >= 200) & (status < 300) & np.isfinite(late) & (late <= bound_s)
    return round(int(good.sum()) / span_s, 3)


def _sorted(t: np.ndarray, limit: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(np.asarray(t, dtype=np.float64), kind="stable")
    return np.asarray(t, dtype=np.float64)[order], np.asarray(limit, dtype=np.float64)[order]


def settle_time(t: np.ndarray, limit: np.ndarray, start: float, end: float, band: float = SETTLE_BAND) -> float | None:
    """Seconds from ``start`` until the limit enters, for good, the band around the level it
    holds in the last quarter of [start, end); 0 when it never leaves it; None without samples."""
    t, limit = _sorted(t, limit)
    inside = (t >= start) & (t < end) & np.isfinite(limit)
    ts, ls = t[inside], limit[inside]
    if not len(ts):
        return None
    tail = ls[ts >= start + 0.75 * (end - start)]
    level = float(np.median(tail)) if len(tail) else float(ls[-1])
    outside = np.abs(ls - level) > band * max(abs(level), 1e-9)
    if not outside.any():
        return 0.0
    last = int(np.flatnonzero(outside)[-1])
    settled_at = ts[last + 1] if last + 1 < len(ts) else end
    return round(float(settled_at - start), 4)


def collapse(t: np.ndarray, limit: np.ndarray) -> tuple[float, float] | None:
    """When the limit fell for good onto its floor (every later sample within SETTLE_BAND above the
    run's lowest) and that floor, when it ended there at COLLAPSE of its peak or below; else None."""
    t, limit = _sorted(t, limit)
    t, limit = t[np.isfinite(limit)], limit[np.isfinite(limit)]
    if not len(limit) or limit[-1] > COLLAPSE * limit.max():
        return None
    floor = float(limit.min())
    above = np.flatnonzero(limit > floor * (1 + SETTLE_BAND))
    if len(above) and above[-1] == len(limit) - 1:  # low, but its last sample is not on its floor: still moving
        return None
    return float(t[above[-1] + 1] if len(above) else t[0]), floor


def oscillation(t: np.ndarray, limit: np.ndarray, start: float, end: float) -> float | None:
    """Coefficient of variation (std / mean) of the limit over [start, end); None without samples."""
    t, limit = np.asarray(t, dtype=np.float64), np.asarray(limit, dtype=np.float64)
    ls = limit[(t >= start) & (t < end) & np.isfinite(limit)]
    if not len(ls) or ls.mean() == 0:
        return None
    return round(float(ls.std() / ls.mean()), 4)


def break_window(info: RunInfo) -> tuple[float, float] | None:
    """The downstream's change as (start, end) on the run's clock, from run.json's phases."""
    phase = min((p for p in info.phases if p.name in BREAK_PHASES), key=lambda p: p.start_t, default=None)
    return None if phase is None else (phase.start_t, phase.end_t)


def measures(info: RunInfo, decisions: pd.DataFrame, client: pd.DataFrame | None, origin: float) -> dict[str, Any]:
    """The head-to-head fields of one adaptive run (EMPTY's keys): limit from the decision log,
    goodput from the client log, both against the break window."""
    row = dict(EMPTY)
    if client is not None and len(client):
        span = float(np.nanmax(client["done_t"].to_numpy(dtype=np.float64)) - origin)
        row["goodput_in_bound_rps"] = goodput_in_bound(client["intended_t"].to_numpy(), client["done_t"].to_numpy(),
                                                       client["status"].to_numpy(), span)
    window = break_window(info)
    if "adaptive_limit" not in decisions.columns or decisions["adaptive_limit"].isna().all():
        return row
    t, limit = decisions["t"].to_numpy(dtype=np.float64), decisions["adaptive_limit"].to_numpy(dtype=np.float64)
    fell = collapse(t, limit)
    if fell is not None:
        row["limit_collapsed_s"], row["limit_floor"] = round(fell[0] - origin, 3), fell[1]
    if window is None:
        return row
    start, end = window
    last = float(t.max())
    row["limit_react_s"] = settle_time(t, limit, start, end)
    row["limit_recover_s"] = settle_time(t, limit, end, last + 1e-9) if end < last else None
    steady = origin + (start - origin) / 2
    row["limit_cov"] = oscillation(t, limit, steady, start)
    mean = limit[(t >= steady) & (t < start)]
    row["limit_mean"] = round(float(np.nanmean(mean)), 3) if len(mean) else None
    return row


def one_row_per_request(df: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray | None]:
    """A live target logs an admitted request once per layer that applied: with a gateway's
    bucket in front of an adaptive limiter, the bucket's row of a request the limiter admitted too
    (the admitted row without a limit) is dropped, so each request counts once, on the limiter's
    row; a refused request has one row already, its refusing layer's. Returns the frame and the
    positions kept (None: every row)."""
    if "adaptive_limit" not in df.columns or "limit_name" not in df.columns or df["limit_name"].nunique() < 2:
        return df, None
    limit = df["adaptive_limit"].to_numpy(dtype=np.float64)
    extra = df["allowed"].to_numpy(dtype=bool) & np.isnan(limit)
    if not extra.any() or np.isnan(limit).all():
        return df, None
    kept = np.flatnonzero(~extra)
    return df.iloc[kept].reset_index(drop=True), kept


def head_to_head_fields(info: RunInfo, decisions: pd.DataFrame, client: pd.DataFrame | None,
                        origin: float) -> dict[str, Any]:
    """An adaptive run's row of the head to head: its measures, the rule as the tables name it,
    the way its downstream broke and (a gateway in front) the requests the bucket refused."""
    row = measures(info, decisions, client, origin)
    row["adaptive_rule"] = rule_label(info.params, info.gateway)
    row["break_kind"] = info.scenario_params.get("kind", info.scenario.split("-", 1)[0])
    row["refused_by_gateway"] = None
    if info.gateway is not None and "limit_name" in decisions.columns:
        refused = ~decisions["allowed"].to_numpy(dtype=bool)
        row["refused_by_gateway"] = int((decisions["limit_name"].to_numpy()[refused] == GATEWAY_LIMIT).sum())
    return row


def rule_label(params: dict[str, Any], gateway: dict[str, float] | None = None) -> str | None:
    """The rule as the head to head names it: ``gradient2``, ``gradient2 windowed``, ``aimd +
    bucket 300/s, burst 16`` (a gateway's token bucket in front)."""
    rule = params.get("rule")
    if rule is None:
        return None
    return (f"{rule} windowed" if params.get("window", "none") != "none" else str(rule)) + gateway_text(gateway)


def limit_over_time(t: np.ndarray, limit: np.ndarray, origin: float, bin_s: float = 0.05) -> pd.DataFrame:
    """The limit at the end of each ``bin_s`` bin (t since ``origin``), for the chart: a run's
    thousands of decisions drawn as at most a few hundred steps."""
    t, limit = _sorted(t, limit)
    keep = np.isfinite(limit)
    bins = np.floor((t[keep] - origin) / bin_s).astype(np.int64)
    if not len(bins):
        return pd.DataFrame({"t": [], "limit": []})
    last = np.flatnonzero(np.append(bins[1:] != bins[:-1], True))
    return pd.DataFrame({"t": bins[last] * bin_s, "limit": limit[keep][last]})
