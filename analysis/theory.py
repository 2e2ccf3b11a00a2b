"""Each algorithm's theoretical bounds (docs/architecture.md's table), from the run's policy and parameters.

Drawn beside the measurements: a measured value above its bound is a bug, far below it means the
scenario did not find the worst case. Algorithms without a bound on admitted traffic
(``concurrency``, ``adaptive``, ``none``) and the sliding window counter and ring (whose
worst case depends on the arrival pattern, up to 2L) get None where no closed form is given.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from contract.run_info import RunPolicy

BUCKETS = ("token_bucket", "leaky_bucket", "gcra")
CONCURRENCY_LIMITERS = ("concurrency", "adaptive")
"""They bound work in progress, not a rate, and count under one global key (``*``): their measure
is the peak in flight against their bound, never over-admission on a rate limiter's axis."""


def bounds_concurrency(algorithm: str) -> bool:
    return algorithm in CONCURRENCY_LIMITERS


def in_flight_bound(algorithm: str, policy: RunPolicy, params: dict[str, Any]) -> float | None:
    """The most cost a concurrency limiter lets be in flight at once (adaptive: its ceiling)."""
    if algorithm == "concurrency":
        return float(params.get("max_in_flight", policy.burst))
    if algorithm == "adaptive":
        return float(params.get("max_limit", policy.burst))
    return None


def _capacity_rate(algorithm: str, policy: RunPolicy, params: dict[str, Any]) -> tuple[float, float]:
    """Burst capacity C (cost units) and refill rate r (units/s) of the bucket-like algorithms."""
    if algorithm == "gcra" and params.get("interval_s"):
        return float(params.get("burst", policy.burst)), 1.0 / float(params["interval_s"])
    rate = float(params.get("rate", policy.limit / policy.window_s))
    return float(params.get("capacity", policy.burst)), rate


def over_admission_bound(algorithm: str, policy: RunPolicy, params: dict[str, Any]) -> float | None:
    """The most admitted cost in any window W, as a multiple of L."""
    if algorithm in ("fixed_window", "sliding_window_counter", "sliding_window_ring", "limits_fixed_window"):
        return 2.0
    if algorithm == "sliding_log":
        return 1.0
    if algorithm in BUCKETS:
        capacity, rate = _capacity_rate(algorithm, policy, params)
        return (capacity + rate * policy.window_s) / policy.limit
    return None


def envelope_bound(algorithm: str, policy: RunPolicy, params: dict[str, Any], d: np.ndarray) -> np.ndarray | None:
    """The theoretical arrival curve: the most admitted cost in any interval of length d.

    Buckets: C + r*d. Fixed window: an interval of length d meets at most ceil(d/W) + 1 aligned
    windows, so L*(ceil(d/W) + 1): 2L however short d is. Sliding log: L*ceil(d/W), L up to W.
    """
    d = np.asarray(d, dtype=np.float64)
    windows = np.ceil(np.round(d / policy.window_s, 9))
    if algorithm == "fixed_window":
        return policy.limit * (windows + 1)
    if algorithm == "sliding_log":
        return policy.limit * windows
    if algorithm in BUCKETS:
        capacity, rate = _capacity_rate(algorithm, policy, params)
        return capacity + rate * d
    return None


