"""Latency of admitted requests from the client log, with exact nearest-rank percentiles.

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

from .runinfo import Phase
from .schema import STATUS_TOO_MANY

PERCENTILES = {"p50": 50.0, "p90": 90.0, "p99": 99.0, "p999": 99.9}
BASES = {"intended": "intended_t", "sent": "sent_t"}
RECOVERY_FACTOR = 1.5
"""Recovered once every later second's P99 is within this factor of the pre-degradation P99."""
TIME_BIN_S = 1.0


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


def over_time(lat: pd.DataFrame, origin: float, bin_s: float = TIME_BIN_S) -> pd.DataFrame:
    """Nearest-rank P50 and P99 (from the intended time) per bin of intended send time."""
    if lat.empty:
        return pd.DataFrame(columns=["t", "p50", "p99"])
    bins = np.floor((lat["t"].to_numpy() - origin) / bin_s).astype(np.int64)
    frame = pd.DataFrame({"bin": bins, "ms": lat["intended"].to_numpy()}).sort_values(["bin", "ms"], kind="stable")
    sizes = frame.groupby("bin", sort=True).size()
    first = np.concatenate(([0], np.cumsum(sizes.to_numpy())[:-1]))
    ms = frame["ms"].to_numpy()
    out = {"t": sizes.index.to_numpy() * bin_s}
    for name, q in (("p50", 50.0), ("p99", 99.0)):
        k = np.maximum(1, np.ceil(np.round(q / 100.0 * sizes.to_numpy(), 9)).astype(np.int64))
        out[name] = ms[first + k - 1]
    return pd.DataFrame(out)


def time_to_recover(series: pd.DataFrame, degraded: Phase, origin: float) -> float | None:
    """Seconds from the end of the degraded phase until P99 stays within RECOVERY_FACTOR of its
    pre-degradation value for the rest of the run (0 when it never left); None when it never
    recovers or there is no baseline."""
    start, end = degraded.start_t - origin, degraded.end_t - origin
    before = series.loc[series["t"] + TIME_BIN_S <= start, "p99"]
    after = series.loc[series["t"] >= end]
    if before.empty or after.empty:
        return None
    ok = after["p99"].to_numpy() <= RECOVERY_FACTOR * float(before.median())
    bad = np.flatnonzero(~ok)
    if len(bad) == 0:
        return 0.0
    if bad[-1] == len(ok) - 1:
        return None
    return round(float(after["t"].to_numpy()[bad[-1] + 1] - end), 3)


def cdf(values: np.ndarray, points: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    """An empirical CDF thinned to ``points`` quantiles (charts do not need every sample)."""
    x = np.sort(np.asarray(values, dtype=np.float64))
    idx = np.unique(np.linspace(0, len(x) - 1, min(points, len(x))).astype(np.int64))
    return x[idx], (idx + 1) / max(len(x), 1)
