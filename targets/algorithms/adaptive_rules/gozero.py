"""go-zero's adaptive load shedder (``core/load/adaptiveshedder.go``).

Drop a request when the CPU is over ``cpu_threshold`` (or was, less than ``gozero_cool_off_s``
ago, and something was dropped since) AND both the requests in flight and their moving average
exceed ``max_flight = max(1, max passes per bucket x min average RT per bucket, per second)``,
scaled down by ``clamp((1 - cpu) / (1 - threshold), 0.1, 1)``. Passes and RTs (whole ms, rounded
up) are counted in ``gozero_buckets`` buckets over ``gozero_window_s``, the current bucket left
out; min RT is 1 s when no bucket has one. The average flying is updated when a request leaves:
``avg = avg * 0.9 + flying * 0.1``. Defaults as go-zero's: 5 s in 50 buckets, threshold 900
millicpu (0.9), cool-off 1 s. go-zero reads the container's CPU as an EMA (beta 0.95) every
250 ms; here the reading comes in through ``Reading`` (live: the target process's CPU, sampled
every 250 ms). Like every rule, never more than ``max_limit`` in flight.
"""

from __future__ import annotations

import math

from .base import (
    Memo,
    Params,
    Reading,
    Rule,
    add_to_bucket,
    buckets_within,
    clamp,
    refuse,
    require_at_least,
    require_cpu_threshold,
)

FLYING_BETA = 0.9
DEFAULT_MIN_RT_MS = 1000.0
OVERLOAD_FACTOR_FLOOR = 0.1

# memo: (buckets of (id, passes, rt sum ms, rt count), avg flying, cpu, last hot at, dropped recently)


def _fresh(p: Params) -> tuple[float, Memo]:
    return p.max_limit, ((), 0.0, 0.0, -math.inf, False)


def _bucket_s(p: Params) -> float:
    return p.gozero_window_s / p.gozero_buckets


def _sample(limit: float, in_flight: float, memo: Memo, now: float, rtt_s: float,
            p: Params) -> tuple[float, Memo]:
    """``promise.Pass``: one pass and its RT in whole ms rounded up."""
    rt_ms = math.ceil(rtt_s * 1000.0 - 1e-9)

    def merge(old: tuple | None) -> tuple:
        return (1, rt_ms, 1) if old is None else (old[0] + 1, old[1] + rt_ms, old[2] + 1)

    buckets = add_to_bucket(memo[0], now, _bucket_s(p), p.gozero_buckets, merge)
    return limit, (buckets, *memo[1:])


def max_flight(memo: Memo, now: float, p: Params) -> float:
    """``maxFlight``: max passes in a bucket x min average RT (ms) x buckets per ms."""
    bucket_s = _bucket_s(p)
    window = buckets_within(memo[0], now, bucket_s, p.gozero_buckets - 1, 1)
    max_pass = max((b[1] for b in window), default=1)
    # Go's math.Round rounds half away from zero (Python's round() to even): RTs are positive
    min_rt = min((math.floor(b[2] / b[3] + 0.5) for b in window if b[3] > 0), default=DEFAULT_MIN_RT_MS)
    return max(1.0, max(1, max_pass) * min_rt / (bucket_s * 1000.0))


def _admit(limit: float, in_flight: float, memo: Memo, now: float, cost: float,
           p: Params) -> tuple[bool, float, Memo]:
    buckets, avg_flying, cpu, hot_at, dropped = memo
    overloaded = cpu >= p.cpu_threshold
    if overloaded:
        hot_at = now
    elif dropped and now - hot_at >= p.gozero_cool_off_s:
        dropped = False
    if overloaded or dropped:
        factor = clamp((1 - cpu) / (1 - p.cpu_threshold), OVERLOAD_FACTOR_FLOOR, 1.0)
        flight = max_flight(memo, now, p) * factor
        limit = min(p.max_limit, flight)
        if avg_flying > flight and in_flight > flight:
            return False, limit, (buckets, avg_flying, cpu, hot_at, True)
    else:
        limit = p.max_limit
    return cost <= math.floor(p.max_limit) - in_flight, limit, (buckets, avg_flying, cpu, hot_at, dropped)


def _read(limit: float, memo: Memo, now: float, reading: Reading, p: Params) -> tuple[float, Memo]:
    return limit, (memo[0], memo[1], reading.cpu, memo[3], memo[4])


def _released(limit: float, memo: Memo, in_flight: float, p: Params) -> tuple[float, Memo]:
    avg = memo[1] * FLYING_BETA + in_flight * (1 - FLYING_BETA)
    return limit, (memo[0], avg, *memo[2:])


def _check(p: Params) -> None:
    require_cpu_threshold("gozero", p)
    require_at_least("gozero", p, "gozero_window_s", 0, strict=True)
    if p.gozero_buckets < 2:
        raise refuse("gozero", "gozero_buckets", p.gozero_buckets, "gozero_buckets >= 2 (the current one is left out)")
    require_at_least("gozero", p, "gozero_cool_off_s", 0)


GOZERO = Rule("gozero", _fresh, _sample, _check, admit=_admit,
              read=_read, released=_released, reads=True, samples_failures=False)
