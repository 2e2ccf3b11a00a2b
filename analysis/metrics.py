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


LOOP_KEYS = 32
"""Keys searched one by one before all keys are swept together in one vectorised pass."""
MAX_COMPOSITE = 2**62


def time_order_by_key(t: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Row order by key, then time. Logs are written in time order, so a stable sort of the key
    codes alone usually does it (radix sort on small integers: far cheaper than a lexsort)."""
    if len(t) and not np.all(t[1:] >= t[:-1]):
        return np.lexsort((t, codes))
    small = codes.astype(np.int16) if len(codes) and codes.max() < 2**15 else codes
    return np.argsort(small, kind="stable")


def key_axis(t: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, int] | None:
    """Every key on one sorted integer axis (rows sorted by key, then time): nanoseconds since
    the first request, each key shifted past the previous one's span, so one sorted search serves
    all keys and no window reaches into the next key. Returns (axis, span); None on overflow."""
    ns = np.round((t - t.min()) * 1e9).astype(np.int64)
    span = int(ns.max()) + 1
    if (int(codes.max()) + 2) * 2 * span >= MAX_COMPOSITE:
        return None
    return codes.astype(np.int64) * (2 * span) + ns, span


class _KeyedTimes:
    """Admitted (time, cost) per key, sorted, with per-key totals for pruning."""

    def __init__(self, t: np.ndarray, cost: np.ndarray, keys: np.ndarray | pd.Series) -> None:
        codes, _ = pd.factorize(keys, sort=False)
        order = time_order_by_key(t, codes)
        self.t, self.cost, self.codes = t[order], cost[order], codes[order]
        bounds = np.flatnonzero(np.diff(self.codes)) + 1
        self.starts = np.concatenate(([0], bounds))
        self.ends = np.concatenate((bounds, [len(self.codes)]))
        self.totals = np.add.reduceat(self.cost, self.starts) if len(self.codes) else np.empty(0)
        self.by_total = np.argsort(-self.totals, kind="stable")
        self._keys: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._all: tuple[np.ndarray, np.ndarray, np.ndarray, int] | None = None

    def _prefix(self, g: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Key g's times, cost prefix sums and left ends, kept: an envelope asks for many lengths."""
        if g not in self._keys:
            t = self.t[self.starts[g]:self.ends[g]]
            csum = np.concatenate(([0.0], np.cumsum(self.cost[self.starts[g]:self.ends[g]], dtype=np.float64)))
            self._keys[g] = (t, csum, np.searchsorted(t, t, side="left"))
        return self._keys[g]

    def _one(self, g: int, window: float) -> float:
        t, csum, start = self._prefix(g)
        end = np.searchsorted(t, t + window, side="left")
        return float((csum[end] - csum[start]).max())

    def _composite(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, int] | None:
        if self._all is None:
            keyed = key_axis(self.t, self.codes)
            if keyed is None:
                return None
            axis, span = keyed
            csum = np.concatenate(([0.0], np.cumsum(self.cost, dtype=np.float64)))
            self._all = (axis, csum, np.searchsorted(axis, axis, side="left"), span)
        return self._all

    def _together(self, window: float) -> float | None:
        """max_window_cost of every key in one pass (times compared to the nanosecond)."""
        composite = self._composite()
        if composite is None:
            return None
        axis, csum, start, span = composite
        end = np.searchsorted(axis, axis + min(round(window * 1e9), span), side="left")
        return float((csum[end] - csum[start]).max())

    def worst(self, window: float) -> float:
        """Max over keys of max_window_cost; keys whose whole total cannot beat it are skipped,
        and beyond LOOP_KEYS keys the rest are swept together."""
        if len(self.totals) == 0:
            return 0.0
        best = self._one(self.by_total[0], window)
        rivals = self.by_total[1:][self.totals[self.by_total[1:]] > best]
        if len(rivals) > LOOP_KEYS and (together := self._together(window)) is not None:
            return together
        for g in rivals:
            if self.totals[g] <= best:
                break
            best = max(best, self._one(g, window))
        return best


def admitted_times(df: pd.DataFrame) -> _KeyedTimes:
    """Admitted requests per key, sorted once: over-admission and the envelope both sweep it."""
    allowed = df["allowed"].to_numpy(dtype=bool)
    t = df["t"].to_numpy(dtype=np.float64)[allowed]
    if "delay_s" in df.columns:
        t = t + df["delay_s"].fillna(0.0).to_numpy(dtype=np.float64)[allowed]
    keys, _ = pd.factorize(df["key"])  # column-wise: no copy of the whole frame
    return _KeyedTimes(t, df["cost"].to_numpy(dtype=np.float64)[allowed], keys[allowed])


def over_admission(df: pd.DataFrame, limit: float, window_s: float) -> float:
    """Worst key's max admitted cost in any window of length W, divided by L."""
    return admitted_times(df).worst(window_s) / limit


def admitted_envelope(df: pd.DataFrame, lengths: Iterable[float]) -> pd.DataFrame:
    """The empirical arrival curve: for each interval length d, the max admitted cost in any
    interval of length d (worst key)."""
    return envelope_of(admitted_times(df), lengths)


def envelope_of(keyed: _KeyedTimes, lengths: Iterable[float]) -> pd.DataFrame:
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
    legit = (df["client_class"] == LEGIT).to_numpy(dtype=bool)  # compares codes when categorical
    abusive = (df["client_class"] == ABUSIVE).to_numpy(dtype=bool)
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


def jain_index(values: np.ndarray) -> float | None:
    """Jain's fairness index (sum x)^2 / (n * sum x^2): 1 when all equal, 1/n when one takes all.
    None when undefined (no values, or all zero)."""
    x = np.asarray(values, dtype=np.float64)
    square_sum = float((x * x).sum())
    if len(x) == 0 or square_sum == 0.0:
        return None
    return float(x.sum() ** 2 / (len(x) * square_sum))


def legit_fairness(df: pd.DataFrame) -> float | None:
    """Jain's index among legitimate clients of each one's admitted share of its own demand
    (admitted cost / requested cost): clients asking for different amounts are treated fairly
    when each gets the same share. Clients are ``client_id`` (``key`` when the log has none)."""
    legit = (df["client_class"] == LEGIT).to_numpy(dtype=bool)
    if not legit.any():
        return None
    codes, _ = pd.factorize(df["client_id"] if "client_id" in df.columns else df["key"])
    codes = codes[legit]
    cost = df["cost"].to_numpy(dtype=np.float64)[legit]
    asked = np.bincount(codes, weights=cost)
    got = np.bincount(codes, weights=cost * df["allowed"].to_numpy(dtype=bool)[legit])
    return jain_index(got[asked > 0] / asked[asked > 0])


def rejections_by_limit(df: pd.DataFrame) -> dict[str, int]:
    """Rejected decisions per ``limit_name`` (layered limits say which one bites)."""
    if "limit_name" not in df.columns:
        return {}
    rejected = df.loc[~df["allowed"].to_numpy(dtype=bool), "limit_name"]
    counts = rejected.value_counts(sort=False)
    return {str(k): int(v) for k, v in counts.items() if v > 0}
