"""Metrics computed from decision logs, one piece of code for the simulator and live runs.

Definitions (docs/analysis.md, "Metric definitions"):
- over-admission (rate limiters only): max over every window [s, s + W) of the admitted cost / L,
  for the worst key of those the policy names (the decision log's ``key``). An admitted request
  counts at ``t + delay_s`` (when a queueing limiter lets it through).
- in flight (concurrency limiters only): the peak admitted cost in flight at one instant, against
  the limiter's bound.
- admitted-traffic envelope: the same maximum for every interval length d.
- false admits / rejects: against ``ideal_allowed``, sliding_log's decisions replayed on the
  same arrivals by the harness (analysis never imports the algorithms).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from contract.run_info import RunPolicy
from contract.schema import ABUSIVE, LEGIT

from .theory import bounds_concurrency, in_flight_bound

DEFAULT_HOLD_S = 0.1
"""The concurrency limiters' default ``hold_s``: how long a request without a completion time
(no client log row) holds its slot, as the simulator holds it."""


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


MAX_COMPOSITE = 2**62
CHUNK_ROWS = 1 << 10
"""Left ends searched per step: a short stretch of the axis to search (fewer bisection steps,
all in the CPU cache) outweighs the cost of more numpy calls, down to about this size."""


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


def chunked_maxima(axis: np.ndarray, cost: np.ndarray, lengths_ns: np.ndarray) -> np.ndarray:
    """For each length d (ns), the max total cost in any [a_i, a_i + d) of the sorted ``axis``.

    Left end i counts from row i rather than from the first row of its time: with costs >= 0 the
    first of equal times holds the larger sum, so the maximum is the same. All lengths are searched
    at once, chunk by chunk, in the stretch of the axis the chunk's windows can reach.
    """
    csum = np.concatenate(([0.0], np.cumsum(cost, dtype=np.float64)))
    best = np.zeros(len(lengths_ns))
    widest = int(lengths_ns.max()) if len(lengths_ns) else 0
    for lo in range(0, len(axis), CHUNK_ROWS):
        hi = min(lo + CHUNK_ROWS, len(axis))
        reach = int(np.searchsorted(axis, axis[hi - 1] + widest, side="left"))
        needles = axis[lo:hi][None, :] + lengths_ns[:, None]
        ends = np.searchsorted(axis[lo:reach], needles.ravel(), side="left").reshape(needles.shape) + lo
        best = np.maximum(best, (csum[ends] - csum[lo:hi][None, :]).max(axis=1))
    return best


class _KeyedTimes:
    """Admitted (time, cost) per key, sorted once: over-admission and the envelope both sweep it."""

    def __init__(self, t: np.ndarray, cost: np.ndarray, keys: np.ndarray | pd.Series) -> None:
        is_codes = isinstance(keys, np.ndarray) and keys.dtype.kind == "i" and (len(keys) == 0 or keys.min() >= 0)
        codes = keys if is_codes else pd.factorize(keys, sort=False)[0]  # codes already: no second hash pass
        order = time_order_by_key(t, codes)
        self.t, self.cost, self.codes = t[order], cost[order], codes[order]
        bounds = np.flatnonzero(np.diff(self.codes)) + 1
        self.starts = np.concatenate(([0], bounds))
        self.ends = np.concatenate((bounds, [len(self.codes)]))

    def _per_key(self, window: float) -> float:
        """max_window_cost key by key, for logs too long to share one nanosecond axis (many keys
        over a long run); a key whose whole cost cannot beat the best so far is skipped."""
        totals = np.add.reduceat(self.cost, self.starts)
        best = 0.0
        for g in np.argsort(-totals, kind="stable").tolist():
            if totals[g] <= best:
                break
            a, b = self.starts[g], self.ends[g]
            best = max(best, max_window_cost(self.t[a:b], self.cost[a:b], window))
        return best

    def maxima(self, lengths: Iterable[float]) -> np.ndarray:
        """Worst key's max admitted cost in any interval of each length (times to the nanosecond)."""
        lengths = np.asarray(list(lengths), dtype=np.float64)
        if len(self.t) == 0:
            return np.zeros(len(lengths))
        keyed = key_axis(self.t, self.codes)
        if keyed is None:
            return np.array([self._per_key(d) for d in lengths])
        axis, span = keyed
        return chunked_maxima(axis, self.cost, np.minimum(np.round(lengths * 1e9), span).astype(np.int64))

    def worst(self, window: float) -> float:
        """Max over keys of max_window_cost."""
        return float(self.maxima([window])[0])


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
    lengths = np.asarray(list(lengths), dtype=np.float64)
    return pd.DataFrame({"interval_s": lengths, "max_admitted_cost": keyed.maxima(lengths)})


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


def peak_in_flight(start: np.ndarray, end: np.ndarray, cost: np.ndarray, codes: np.ndarray | None = None) -> float:
    """Max total cost of the half-open intervals [start, end) of one key (``codes``; one key when
    None) that cover one instant: a sweep, key by key (each key's starts and ends cancel, so one
    running sum over the keys in turn restarts at 0 for each), an end before a start at equal times."""
    if len(start) == 0:
        return 0.0
    codes = np.zeros(len(start), dtype=np.int64) if codes is None else codes
    times = np.concatenate((end, start))
    deltas = np.concatenate((-cost, cost))
    order = np.lexsort((deltas, times, np.concatenate((codes, codes))))  # by key, time, ends (negative) first
    return float(np.cumsum(deltas[order]).max())


def in_flight(df: pd.DataFrame, bound: float, done_t: np.ndarray | None = None,
              hold_s: float = DEFAULT_HOLD_S) -> dict[str, float]:
    """``in_flight_peak`` and ``in_flight_ratio`` (peak / bound) of admitted requests of the worst
    key (live targets count under one key, ``*``; the simulator per client), each in flight from
    its decision (plus ``delay_s``) to ``done_t`` (the client log's, aligned with ``df``; NaN where
    unknown) or, without it, for ``hold_s``."""
    allowed = df["allowed"].to_numpy(dtype=bool)
    start = df["t"].to_numpy(dtype=np.float64)
    if "delay_s" in df.columns:
        start = start + df["delay_s"].fillna(0.0).to_numpy(dtype=np.float64)
    end = start + hold_s
    if done_t is not None:
        end = np.where(np.isfinite(done_t) & (done_t > start), done_t, end)
    codes, _ = pd.factorize(df["key"])
    peak = peak_in_flight(start[allowed], end[allowed], df["cost"].to_numpy(dtype=np.float64)[allowed], codes[allowed])
    return {"in_flight_peak": round(peak, 6), "in_flight_bound": bound, "in_flight_ratio": round(peak / bound, 6)}


NO_IN_FLIGHT = {"in_flight_peak": None, "in_flight_bound": None, "in_flight_ratio": None}


def basis(df: pd.DataFrame, algorithm: str, policy: RunPolicy, params: dict,
          done_t: np.ndarray | None = None) -> dict[str, float | None]:
    """Each limiter measured on its own basis: a rate limiter's over-admission per key, a
    concurrency limiter's peak in flight against its bound; the other measure is None."""
    bound = in_flight_bound(algorithm, policy, params)
    if bounds_concurrency(algorithm) and bound:
        hold = float(params.get("hold_s", DEFAULT_HOLD_S))
        return {"over_admission": None, **in_flight(df, bound, done_t, hold)}
    return {"over_admission": round(over_admission(df, policy.limit, policy.window_s), 6), **NO_IN_FLIGHT}


def summarize(df: pd.DataFrame, algorithm: str, policy: RunPolicy, params: dict) -> dict[str, float | int | None]:
    """The per-run metrics of the summary row."""
    row: dict[str, float | int | None] = dict(class_split(df))
    row.update(basis(df, algorithm, policy, params))
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
