"""A ramp run binned by offered rate: per bin the rate offered, the P99 of admitted requests, and
how many of its sends were late and how many requests failed; and the highest rate a run sustained.

The ramp's offered rate rises with time (the ``ramp`` phase of run.json spans it), so bins of
time are bins of offered rate; each bin's rate is counted from the client log (the requests whose
intended send falls in it), not taken from the line. Sustained up to R: every bin offered at most
R kept its P99 (from the intended send, nearest rank) within the bound, was replayed cleanly
(fewer than 1% of its requests sent late: the suite's rule for a clean replay, as in
``run_bench.py bench live``), and none of its requests failed. Bins are taken in order of offered rate, and the first bad one ends the
count: a queue built at one rate is still there at the next, so a good bin after a bad one is
not a rate the run sustained. One exception, named in the row: a start-up stall, up to
STARTUP_BINS first bins made bad by late sends and followed by a good one, is set aside
(``ramp_startup_stall_s``) and the count starts after it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from contract.run_info import RunInfo
from contract.schema import LATE_S, RAMP_PHASE, STATUS_TOO_MANY

from .latency import nearest_rank

RAMP_SCENARIO = "ramp"
P99_BOUND_MS = 100.0
"""The default bound: 10x the default downstream's median service time (10 ms), above the P99 of
its service times alone (~32 ms at sigma 0.5) and of a busy target's HTTP stack, and far under
the queues of a downstream run past its capacity (seconds). A ramp entry may set its own
(``p99_bound_ms``)."""
BIN_S = 1.0
LATE_SHARE = 0.01
"""A bin with this share of its requests sent late (more than LATE_S after the intended time) or
more was not replayed cleanly: the generator, not the target, may have set what it measured."""
STOPS = ("p99", "late", "failed")
"""Why a bin is bad, in the order reported when several apply."""
STARTUP_BINS = 2
"""At most this many of the ramp's first bins, late and followed by a good one, are a start-up
stall (the generator's first seconds: its connections, its processes' first pages, its clock) and
not a ceiling: a ceiling at the ramp's lowest rate would hold at every higher one."""

EMPTY = {"ramp_sustained_rps": None, "ramp_stopped_by": None, "ramp_p99_bound_ms": None,
         "ramp_offered_min_rps": None, "ramp_offered_max_rps": None, "ramp_startup_stall_s": None}


def settings(info: RunInfo) -> tuple[float, float]:
    """The run's P99 bound (ms) and bin width (s): its scenario parameters, else the defaults."""
    params = info.scenario_params
    return float(params.get("p99_bound_ms") or P99_BOUND_MS), float(params.get("bin_s") or BIN_S)


def span(info: RunInfo) -> tuple[float, float] | None:
    return next(((p.start_t, p.end_t) for p in info.phases if p.name == RAMP_PHASE), None)


def bins(client: pd.DataFrame, start_t: float, end_t: float, bin_s: float) -> pd.DataFrame:
    """One row per whole bin of ``bin_s`` from ``start_t`` to ``end_t``: ``t`` (bin start after
    ``start_t``), ``offered_rps``, ``requests``, ``admitted``, ``p99_ms`` (NaN: nothing admitted),
    ``late`` (sent more than LATE_S after the intended time, or never sent) and ``late_share``,
    ``failed`` (no answer, or an answer neither 2xx nor 429)."""
    count = int(np.floor((end_t - start_t) / bin_s + 1e-9))
    intended = client["intended_t"].to_numpy(dtype=np.float64)
    index = np.floor((intended - start_t) / bin_s + 1e-9).astype(np.int64)
    inside = (index >= 0) & (index < count)
    index = index[inside]
    sent = client["sent_t"].to_numpy(dtype=np.float64)[inside]
    done = client["done_t"].to_numpy(dtype=np.float64)[inside]
    status = client["status"].to_numpy()[inside]
    answered = np.isfinite(done) & (status > 0)
    ok = answered & (status >= 200) & (status < 300)
    failed = ~answered | ~(ok | (status == STATUS_TOO_MANY))
    late = ~np.isfinite(sent) | (sent - intended[inside] > LATE_S)
    latency_ms = (done - intended[inside]) * 1000.0
    p99 = np.full(count, np.nan)
    for k in np.unique(index[ok]):  # a few dozen bins
        p99[k] = nearest_rank(latency_ms[ok & (index == k)], 99.0)
    requests = np.bincount(index, minlength=count)
    late_count = np.bincount(index[late], minlength=count)
    return pd.DataFrame({"t": np.arange(count) * bin_s, "offered_rps": requests / bin_s, "requests": requests,
                         "admitted": np.bincount(index[ok], minlength=count), "p99_ms": p99, "late": late_count,
                         "late_share": late_count / np.maximum(requests, 1),
                         "failed": np.bincount(index[failed], minlength=count)})


def unclean(table: pd.DataFrame) -> pd.Series:
    """Bins not replayed cleanly (LATE_SHARE or more sent late) or with a failed request."""
    return (table["late_share"] >= LATE_SHARE) | (table["failed"] > 0)


def stops(row: Any, bound_ms: float) -> list[str]:
    """What makes one bin bad (STOPS order); empty for a good bin."""
    bad = {"p99": bool(row.p99_ms > bound_ms), "late": row.late_share >= LATE_SHARE, "failed": row.failed > 0}
    return [name for name in STOPS if bad[name]]


def sustained(table: pd.DataFrame, bound_ms: float) -> tuple[float, str | None]:
    """The highest offered rate sustained (0.0 when the first bin is already bad) and what
    stopped it (None: the run held to the ramp's top)."""
    best = 0.0
    for row in table.sort_values("offered_rps", kind="stable").itertuples():
        why = stops(row, bound_ms)
        if why:
            return best, why[0]
        best = float(row.offered_rps)
    return best, None


def startup_stall(table: pd.DataFrame, bound_ms: float) -> int:
    """How many of the first bins (by offered rate, at most STARTUP_BINS) were bad with late sends
    among their faults and are followed by a good bin: a start-up stall, set aside (0: none)."""
    ordered = list(table.sort_values("offered_rps", kind="stable").itertuples())
    for n in range(1, min(STARTUP_BINS, len(ordered) - 1) + 1):
        if "late" not in stops(ordered[n - 1], bound_ms):
            return 0
        if not stops(ordered[n], bound_ms):
            return n
    return 0


def measures(info: RunInfo, client: pd.DataFrame) -> tuple[dict[str, Any], pd.DataFrame | None]:
    """The row's ramp fields and the bins, for a ramp run with a ``ramp`` phase and a client log."""
    where = span(info)
    if where is None:
        return dict(EMPTY), None
    bound_ms, bin_s = settings(info)
    table = bins(client, *where, bin_s)
    if table.empty:
        return dict(EMPTY), None
    stall = startup_stall(table, bound_ms)
    rate, why = sustained(table.sort_values("offered_rps", kind="stable").iloc[stall:], bound_ms)
    return {"ramp_sustained_rps": round(rate, 3), "ramp_stopped_by": why, "ramp_p99_bound_ms": bound_ms,
            "ramp_offered_min_rps": float(table["offered_rps"].min()),
            "ramp_offered_max_rps": float(table["offered_rps"].max()),
            "ramp_startup_stall_s": stall * bin_s if stall else None}, table
