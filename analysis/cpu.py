"""CPU cost from cpu.csv (psutil samples): target and load-generator CPU per 1,000 requests, the
target's marginal CPU per request, and whether the generator, not the target, was the bottleneck.

Each sample's cpu_percent covers the time since that process's previous sample; a process's first
sample covers nothing (psutil's first reading is 0) and is dropped.

The whole-process figure divides everything the target spent by the requests: on a run of a few
hundred requests over seconds it is mostly the idle process (its event loop, the decision log's
flushes), not the limiter. The marginal figure is the slope of the target's CPU against the
requests it decided, over the sampler's bins of one run (least squares, CPU = idle x span +
marginal x requests): it needs no extra load and no change to what a run sends, and its own 95%
interval says when a run's traffic cannot resolve it (too few requests, or the same count in
every bin). A figure whose interval is wider than RESOLVED_SHARE of it, or that rests on fewer
than MIN_BINS samples that read any CPU, is not given.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from contract.schema import ROLE_GENERATOR, ROLE_TARGET

GENERATOR_BOUND_PERCENT = 90.0
"""A generator process busy this much of one core on average could not have sent any faster."""
LATE_SHARE_BOUND = 0.05
"""More than this share of send groups released late: the generator could not keep its plan."""


def _intervals(cpu: pd.DataFrame, role: str) -> pd.DataFrame:
    """Per sample of a role: the process, the interval it covers (s) and CPU seconds used in it."""
    sub = cpu.loc[cpu["role"] == role, ["process", "t", "cpu_percent"]].sort_values(["process", "t"], kind="stable")
    dt = sub.groupby("process", sort=False)["t"].diff()
    out = pd.DataFrame({"process": sub["process"], "dt": dt, "busy": dt * sub["cpu_percent"] / 100.0})
    return out.dropna()


CLOCK_TICK_S = 0.01
"""psutil reads a process's CPU times in clock ticks (Linux: USER_HZ = 100): a sample resolves 10 ms."""
RESOLVED_SHARE = 0.5
"""The marginal figure is given when its 95% interval's half-width is at most this share of it."""
MIN_BINS = 4
EMPTY_MARGINAL = {"cpu_target_us_per_req": None, "cpu_target_us_per_req_low": None, "cpu_target_us_per_req_high": None,
                  "cpu_target_idle_ms_per_s": None, "cpu_sample_s": None, "cpu_target_resolution_ms_per_1k": None}


def target_bins(cpu: pd.DataFrame) -> pd.DataFrame:
    """The target's CPU per sampler bin: ``start``, ``end`` (one sampling instant: every target
    process is read at once), ``busy`` CPU seconds of all its processes."""
    spans = _intervals(cpu, ROLE_TARGET)
    if spans.empty:
        return pd.DataFrame({"start": [], "end": [], "busy": []})
    end = cpu.loc[spans.index, "t"].to_numpy(dtype=np.float64)
    bins = pd.DataFrame({"end": end, "dt": spans["dt"].to_numpy(), "busy": spans["busy"].to_numpy()})
    bins = bins.groupby("end", as_index=False).agg(dt=("dt", "max"), busy=("busy", "sum")).sort_values("end")
    return pd.DataFrame({"start": bins["end"] - bins["dt"], "end": bins["end"], "busy": bins["busy"]}).reset_index(drop=True)


def marginal_cpu(cpu: pd.DataFrame, decided_t: np.ndarray) -> dict[str, float | None]:
    """The target's marginal CPU per request (µs) with its 95% interval, its idle CPU (ms per
    second), the sampler's interval and the whole-process figure's resolution (ms per 1,000
    requests: one clock tick per target process over the run's requests); the marginal figure
    and its interval are None where the run cannot resolve them (module docstring)."""
    out: dict[str, float | None] = dict(EMPTY_MARGINAL)
    bins = target_bins(cpu)
    if bins.empty:
        return out
    t = np.sort(np.asarray(decided_t, dtype=np.float64))
    n = (np.searchsorted(t, bins["end"].to_numpy(), side="right") - np.searchsorted(t, bins["start"].to_numpy(), side="right"))
    dt, busy = (bins["end"] - bins["start"]).to_numpy(), bins["busy"].to_numpy()
    processes = int(cpu.loc[cpu["role"] == ROLE_TARGET, "process"].nunique())
    out["cpu_sample_s"] = round(float(np.median(dt)), 3)
    if n.sum() > 0:
        out["cpu_target_resolution_ms_per_1k"] = round(CLOCK_TICK_S * processes * 1e6 / float(n.sum()), 3)
    fit = _slope(dt, n.astype(np.float64), busy)
    if fit is None:
        return out
    idle, slope, half = fit
    if slope > 0 and half <= RESOLVED_SHARE * slope:  # the intercept of a fit that resolves nothing says nothing either
        out.update(cpu_target_us_per_req=round(slope * 1e6, 2), cpu_target_us_per_req_low=round((slope - half) * 1e6, 2),
                   cpu_target_us_per_req_high=round((slope + half) * 1e6, 2), cpu_target_idle_ms_per_s=round(idle * 1e3, 3))
    return out


def _slope(dt: np.ndarray, n: np.ndarray, busy: np.ndarray) -> tuple[float, float, float] | None:
    """Least squares of busy = idle x dt + slope x n: (idle, slope, the 95% half-width of the
    slope); None with fewer than MIN_BINS bins that decided requests *and* read CPU (one sample's
    CPU over one bin's requests fits exactly, an interval of no width that measured nothing), or
    requests that do not vary apart from the span."""
    x = np.column_stack([dt, n])
    if np.count_nonzero((n > 0) & (busy > 0)) < MIN_BINS or np.linalg.matrix_rank(x) < 2:
        return None
    coef, _, _, _ = np.linalg.lstsq(x, busy, rcond=None)
    dof = len(busy) - 2
    sigma2 = float(np.sum((busy - x @ coef) ** 2)) / dof
    se = float(np.sqrt(sigma2 * np.linalg.inv(x.T @ x)[1, 1]))
    from scipy import stats  # here: at the top, ~0.6 s every command paid at start

    return float(coef[0]), float(coef[1]), float(stats.t.ppf(0.975, dof)) * se


def cpu_ms_per_1k(cpu: pd.DataFrame, requests: int) -> dict[str, float | None]:
    """``cpu_target_ms_per_1k`` and ``cpu_generator_ms_per_1k``: CPU milliseconds per 1,000 requests
    (all processes of the role together)."""
    row: dict[str, float | None] = {}
    for role in (ROLE_TARGET, ROLE_GENERATOR):
        spans = _intervals(cpu, role)
        ok = not spans.empty and requests > 0
        row[f"cpu_{role}_ms_per_1k"] = round(float(spans["busy"].sum()) * 1e6 / requests, 3) if ok else None
    return row


def generator_bound(cpu: pd.DataFrame, late_share: float | None = None) -> bool | None:
    """True when any generator process was busy GENERATOR_BOUND_PERCENT of a core over the run,
    or (``late_share``: the runner's count of send groups released late) when more than
    LATE_SHARE_BOUND of the plan went out late; None when neither is known."""
    late = late_share is not None and late_share > LATE_SHARE_BOUND
    spans = _intervals(cpu, ROLE_GENERATOR)
    if spans.empty:
        return True if late else None
    per = spans.groupby("process")[["busy", "dt"]].sum()
    return bool(late or (per["busy"] / per["dt"] * 100.0 >= GENERATOR_BOUND_PERCENT).any())
