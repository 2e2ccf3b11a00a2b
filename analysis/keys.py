"""Who got the 429s: one row per key of a run (requests, refused, the most it had admitted in any
window W), and one key's decisions over time. Pure: a decision log in, frames out.

The first question about one's own traffic (``simulate --trace``) is which clients a policy
would have refused; the report's per-key table and the notebook's per-key view both come from here.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .metrics import key_axis, max_window_cost, time_order_by_key

KEY_COLUMNS = ("key", "requests", "refused", "worst_window")
"""``worst_window``: the most admitted cost of that key in any [s, s + W)."""


def _worst_windows(t: np.ndarray, cost: np.ndarray, codes: np.ndarray, keys: int, window_s: float) -> np.ndarray:
    """Per key code, the most admitted cost in any window of length ``window_s`` (0 for a key
    with nothing admitted): the over-admission sweep of analysis.metrics, kept per key."""
    out = np.zeros(keys)
    if not len(t):
        return out
    order = time_order_by_key(t, codes)
    t, cost, codes = t[order], cost[order], codes[order]
    starts = np.concatenate(([0], np.flatnonzero(np.diff(codes)) + 1))
    keyed = key_axis(t, codes)
    if keyed is None:  # too many keys over too long a span for one nanosecond axis: key by key
        ends = [*starts[1:], len(t)]
        for a, b in zip(starts, ends):
            out[codes[a]] = max_window_cost(t[a:b], cost[a:b], window_s)
        return out
    axis, span = keyed
    csum = np.concatenate(([0.0], np.cumsum(cost, dtype=np.float64)))
    end = np.searchsorted(axis, axis + min(round(window_s * 1e9), span), side="left")
    out[codes[starts]] = np.maximum.reduceat(csum[end] - csum[:-1], starts)
    return out


def per_key(df: pd.DataFrame, window_s: float) -> pd.DataFrame:
    """KEY_COLUMNS per key of a decision log (``t``, ``key``, ``cost``, ``allowed``, optional
    ``delay_s``), the most refused first (then the most requests, then the key)."""
    codes, uniques = pd.factorize(df["key"], sort=False)
    allowed = df["allowed"].to_numpy(dtype=bool)
    t = df["t"].to_numpy(dtype=np.float64)
    if "delay_s" in df.columns:  # an admitted request counts when it is let through, as over-admission counts it
        t = t + df["delay_s"].fillna(0.0).to_numpy(dtype=np.float64)
    cost = df["cost"].to_numpy(dtype=np.float64)
    n = len(uniques)
    frame = pd.DataFrame({
        "key": np.asarray(uniques, dtype=object).astype(str),
        "requests": np.bincount(codes, minlength=n),
        "refused": np.bincount(codes[~allowed], minlength=n),
        "worst_window": _worst_windows(t[allowed], cost[allowed], codes[allowed], n, window_s),
    })
    return frame.sort_values(["refused", "requests", "key"], ascending=[False, False, True], kind="stable").reset_index(drop=True)


def timeline(df: pd.DataFrame, key: str, origin: float = 0.0) -> pd.DataFrame:
    """One key's decisions in time order: ``t`` (seconds from ``origin``), ``allowed``, and the
    running count of each, for the notebook's decision timeline."""
    mine = df.loc[df["key"].astype(str) == key, ["t", "allowed"]].sort_values("t", kind="stable")
    allowed = mine["allowed"].to_numpy(dtype=bool)
    return pd.DataFrame({"t": mine["t"].to_numpy(dtype=np.float64) - origin, "allowed": allowed,
                         "admitted_so_far": np.cumsum(allowed), "refused_so_far": np.cumsum(~allowed)})
