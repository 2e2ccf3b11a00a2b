"""Metrics computed from decision logs, one piece of code for the simulator and live runs.

Definitions (DESIGN.md):
- over-admission: max over every window [s, s + W) of the admitted cost / L, for the worst key.
  An admitted request counts at ``t + delay_s`` (when a queueing limiter lets it through).
- admitted-traffic envelope: the same maximum for every interval length d.
- false admits / rejects: against ``ideal_allowed``, sliding_log's decisions replayed on the
  same arrivals by the harness (analysis never imports the algorithms).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from .schema import ABUSIVE, LEGIT


def max_window_cost(t: np.ndarray, cost: np.ndarray, window: float) -> float:
    """Max total cost in any half-open interval [s, s + window) of sorted times ``t``.

    The two-pointer sweep, vectorised: for every left end i (the first of equal times), the right
    pointer is the first time >= t_i + window; a maximal window always starts at an event.
    """
    if len(t) == 0:
        return 0.0
    csum = np.concatenate(([0.0], np.cumsum(cost, dtype=np.float64)))
    start = np.searchsorted(t, t, side="left")
    end = np.searchsorted(t, t + window, side="left")
    return float((csum[end] - csum[start]).max())


class _KeyedTimes:
    """Admitted (time, cost) per key, sorted, with per-key totals for pruning."""

    def __init__(self, t: np.ndarray, cost: np.ndarray, keys: np.ndarray) -> None:
        codes, _ = pd.factorize(keys, sort=False)
        order = np.lexsort((t, codes))
        self.t, self.cost, codes = t[order], cost[order], codes[order]
        bounds = np.flatnonzero(np.diff(codes)) + 1
        self.starts = np.concatenate(([0], bounds))
        self.ends = np.concatenate((bounds, [len(codes)]))
        self.totals = np.add.reduceat(self.cost, self.starts) if len(codes) else np.empty(0)
        self.by_total = np.argsort(-self.totals, kind="stable")

    def worst(self, window: float) -> float:
        """Max over keys of max_window_cost; keys whose whole total cannot beat it are skipped."""
        best = 0.0
        for g in self.by_total:
            if self.totals[g] <= best:
                break
            s, e = self.starts[g], self.ends[g]
            best = max(best, max_window_cost(self.t[s:e], self.cost[s:e], window))
        return best


def _admitted(df: pd.DataFrame) -> _KeyedTimes:
    adm = df[df["allowed"].to_numpy(dtype=bool)]
    t = adm["t"].to_numpy(dtype=np.float64)
    if "delay_s" in adm.columns:
        t = t + adm["delay_s"].fillna(0.0).to_numpy(dtype=np.float64)
    return _KeyedTimes(t, adm["cost"].to_numpy(dtype=np.float64), adm["key"].to_numpy())


def over_admission(df: pd.DataFrame, limit: float, window_s: float) -> float:
    """Worst key's max admitted cost in any window of length W, divided by L."""
    return _admitted(df).worst(window_s) / limit


def admitted_envelope(df: pd.DataFrame, lengths: Iterable[float]) -> pd.DataFrame:
    """The empirical arrival curve: for each interval length d, the max admitted cost in any
    interval of length d (worst key)."""
    keyed = _admitted(df)
    rows = [(d, keyed.worst(d)) for d in lengths]
    return pd.DataFrame(rows, columns=["interval_s", "max_admitted_cost"])


def envelope_lengths(window_s: float, points: int = 40) -> np.ndarray:
    """Interval lengths from 10 ms to 2W, log-spaced, always including W itself."""
    lengths = np.geomspace(0.01, 2 * window_s, points)
    return np.unique(np.append(lengths, window_s))


def accuracy(df: pd.DataFrame) -> dict[str, int]:
    """False admits and false rejects against the ideal (sliding log) decisions."""
    allowed = df["allowed"].to_numpy(dtype=bool)
    ideal = df["ideal_allowed"].to_numpy(dtype=bool)
    return {"false_admits": int((allowed & ~ideal).sum()), "false_rejects": int((~allowed & ideal).sum())}


def class_split(df: pd.DataFrame) -> dict[str, int]:
    """Requests and rejections split by client class (a rejected legit request is the cost users feel)."""
    allowed = df["allowed"].to_numpy(dtype=bool)
    cls = df["client_class"].to_numpy()
    legit, abusive = cls == LEGIT, cls == ABUSIVE
    return {
        "requests": len(df),
        "admitted": int(allowed.sum()),
        "rejected": int((~allowed).sum()),
        "legit_requests": int(legit.sum()),
        "rejected_legit": int((legit & ~allowed).sum()),
        "abusive_requests": int(abusive.sum()),
        "rejected_abusive": int((abusive & ~allowed).sum()),
    }


def summarize(df: pd.DataFrame, limit: float, window_s: float) -> dict[str, float | int]:
    """The per-run metrics of the summary row."""
    row: dict[str, float | int] = dict(class_split(df))
    row["over_admission"] = round(over_admission(df, limit, window_s), 6)
    row.update(accuracy(df))
    return row
