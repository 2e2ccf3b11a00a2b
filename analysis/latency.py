"""Latency of admitted requests from the client log, with exact nearest-rank percentiles: the
project's one percentile (``nearest_rank``), used by the live measures and the benchmarks too.

Nearest rank: the P-th percentile of n sorted values x_1 <= ... <= x_n is x_k with
k = ceil(P/100 * n) (k = 1 for P = 0). It is always an observed value, never interpolated, so a
P99.9 of 1,000 samples is the largest one. Latency is measured two ways for every admitted
request (status other than 429, with a completion time): from the intended send time, which
counts the time a late generator kept the request waiting (no coordinated omission), and from the
actual send time, the figure most tools print.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from contract.run_info import Phase
from contract.schema import STATUS_TOO_MANY

PERCENTILES = {"p50": 50.0, "p90": 90.0, "p99": 99.0, "p999": 99.9}
BASES = {"intended": "intended_t", "sent": "sent_t"}
RECOVERY_FACTOR = 1.5
"""Recovered once every later bin's P99 is within this factor of the pre-degradation P99."""
TARGET_BINS = 40
MIN_BIN_S = 0.1
NICE_STEPS = (1.0, 2.0, 2.5, 5.0)


def nearest_rank(values: np.ndarray, q: float) -> float | None:
    """The nearest-rank q-th percentile (q in [0, 100]); None for no values."""
    n = len(values)
    if n == 0:
        return None
    k = max(1, int(np.ceil(round(q / 100.0 * n, 9))))  # round: 99.9/100*1000 is 999.0000000000001
    return float(np.partition(np.asarray(values, dtype=np.float64), k - 1)[k - 1])


def admitted_latency(client: pd.DataFrame) -> pd.DataFrame:
    """Admitted, completed requests with ``t`` (intended send time) and latency in ms both ways."""
    done = client["done_t"].to_numpy(dtype=np.float64)
    keep = (client["status"].to_numpy() != STATUS_TOO_MANY) & np.isfinite(done)
    sub = client.loc[keep]
    out = pd.DataFrame({"t": sub["intended_t"].to_numpy(dtype=np.float64)})
    for name, column in BASES.items():
        out[name] = (sub["done_t"].to_numpy(dtype=np.float64) - sub[column].to_numpy(dtype=np.float64)) * 1000.0
    return out


def latency_percentiles(lat: pd.DataFrame) -> dict[str, float | None]:
    """``latency_<p>_<basis>_ms`` for every percentile and basis."""
    row: dict[str, float | None] = {}
    for basis in BASES:
        values = lat[basis].to_numpy()
        for name, q in PERCENTILES.items():
            value = nearest_rank(values, q)
            row[f"latency_{name}_{basis}_ms"] = None if value is None else round(value, 3)
    return row


def time_bin(duration_s: float, phase_s: float | None = None) -> float:
    """A round bin width giving 20-40 bins over a run (live runs last seconds, simulated ones
    hours), never under MIN_BIN_S (finer bins hold too few requests for a P99). A width that
    divides the degraded phase's length wins, so both ends of the phase are bin edges (bins are
    laid from its start), even if that takes up to twice as many bins."""
    raw = max(duration_s / TARGET_BINS, MIN_BIN_S)
    decade = 10.0 ** np.floor(np.log10(raw))
    widths = sorted(round(step * decade * scale, 9) for scale in (0.1, 1.0, 10.0) for step in NICE_STEPS)
    usual = [b for b in widths if raw * (1 - 1e-9) <= b <= 2 * raw * (1 + 1e-9)]
    if phase_s is not None and phase_s > 0:
        wider = [b for b in widths if max(raw / 2, MIN_BIN_S) * (1 - 1e-9) <= b <= 2 * raw * (1 + 1e-9)]
        whole = [b for b in (*usual, *reversed(wider)) if abs(phase_s / b - round(phase_s / b)) < 1e-6]
        if whole:
            return whole[0]
    return usual[0]


def over_time(lat: pd.DataFrame, origin: float, bin_s: float, anchor: float | None = None) -> pd.DataFrame:
    """Nearest-rank P50 and P99 (from the intended time) per bin of intended send time; ``t`` is
    each bin's start in seconds after ``origin``. Bins are laid from ``anchor`` (default: the
    origin), so that a degraded phase's start is a bin edge."""
    if lat.empty:
        return pd.DataFrame(columns=["t", "p50", "p99"])
    anchor = origin if anchor is None else anchor
    bins = np.floor((lat["t"].to_numpy() - anchor) / bin_s).astype(np.int64)
    ms = lat["intended"].to_numpy(dtype=np.float64)
    order = np.argsort(bins, kind="stable")  # logs are in time order: an almost free merge sort
    labels, first, sizes = np.unique(bins[order], return_index=True, return_counts=True)
    rows = []
    for lo, n in zip(first.tolist(), sizes.tolist()):  # a few dozen bins: nearest rank by partition in each
        ranks = [max(1, int(np.ceil(round(q / 100.0 * n, 9)))) - 1 for q in (50.0, 99.0)]
        rows.append(np.partition(ms[order[lo:lo + n]], ranks)[ranks])
    p50, p99 = np.array(rows).T
    return pd.DataFrame({"t": (anchor - origin) + labels * bin_s, "p50": p50, "p99": p99})


def time_to_recover(series: pd.DataFrame, degraded: Phase, origin: float, bin_s: float = 1.0) -> float | None:
    """Seconds from the end of the degraded phase until the P99 of every later bin (``series``:
    bins of ``bin_s`` starting at ``t`` s after ``origin``) stays within RECOVERY_FACTOR of the
    median P99 of the whole bins before the phase (0 when it never left). None when there is
    nothing to judge: no bin wholly before the phase (no baseline), no bin after it, or the
    run's last bin is still out of the band (it had not recovered when the run ended)."""
    start, end = degraded.start_t - origin, degraded.end_t - origin
    tol = 1e-3 * bin_s  # bin starts come from epoch-second arithmetic: noise must not drop a bin
    before = series.loc[series["t"] + bin_s <= start + tol, "p99"]
    after = series.loc[series["t"] >= end - tol]
    if before.empty or after.empty:
        return None
    ok = after["p99"].to_numpy() <= RECOVERY_FACTOR * float(before.median())
    bad = np.flatnonzero(~ok)
    if len(bad) == 0:
        return 0.0
    if bad[-1] == len(ok) - 1:
        return None
    return round(max(0.0, float(after["t"].to_numpy()[bad[-1] + 1] - end)), 3)


def cdf(values: np.ndarray, points: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    """An empirical CDF thinned to ``points`` quantiles (charts do not need every sample)."""
    x = np.sort(np.asarray(values, dtype=np.float64))
    idx = np.unique(np.linspace(0, len(x) - 1, min(points, len(x))).astype(np.int64))
    return x[idx], (idx + 1) / max(len(x), 1)
