"""Alibaba Sentinel's adaptive system protection (``slots/system/SystemRuleManager.java``,
``checkSystem`` and ``checkBbr``; statistics from ``StatisticNode``'s one-second window).

- ``sentinel_bbr``: when the host's load average is over ``sentinel_load_threshold``, refuse
  while more than one request is in flight and more than ``max success QPS x min RT`` (the
  BBR estimate of what the pipe holds). Max success QPS is the busiest of the window's two
  500 ms buckets, times two; min RT the lowest latency in them (5 s, Sentinel's
  ``statisticMaxRt``, when none).
- ``sentinel_cpu``: refuse every request while the CPU reading is over ``cpu_threshold``.

Sentinel sets no threshold by default (a rule without one does nothing); its docs suggest a
load of cores x 2.5, so ``sentinel_load_threshold`` defaults to 5 (this bench's 2 cores), and
``cpu_threshold`` to 0.9 (go-zero's default). Sentinel reads the whole host's CPU; here the
target process's (live) or the model's (virtual), through ``Reading``. Like every rule, never
more than ``max_limit`` in flight.
"""

from __future__ import annotations

import math

from .base import Memo, Params, Reading, Rule, add_to_bucket, buckets_within, require_at_least, require_cpu_threshold

BUCKET_S = 0.5
BUCKETS = 2
STATISTIC_MAX_RT_MS = 5000.0


def _fresh(p: Params) -> tuple[float, Memo]:
    return p.max_limit, ((), 0.0, 0.0)  # (buckets of (id, successes, min rt ms), cpu, load)


def _sample(limit: float, in_flight: float, memo: Memo, now: float, rtt_s: float,
            p: Params) -> tuple[float, Memo]:
    rt_ms = math.floor(rtt_s * 1000.0)  # Sentinel's RT: a difference of whole milliseconds

    def merge(old: tuple | None) -> tuple:
        return (1, rt_ms) if old is None else (old[0] + 1, min(old[1], rt_ms))

    return limit, (add_to_bucket(memo[0], now, BUCKET_S, BUCKETS, merge), memo[1], memo[2])


def capacity(memo: Memo, now: float) -> float:
    """``maxSuccessQps() * minRt() / 1000``: requests the pipe holds at its best. As
    ``ArrayMetric``: max success is at least 1 and min RT at least 1 ms, so an empty window
    holds 1 x 2 / 1 s x 5000 ms = 10."""
    window = buckets_within(memo[0], now, BUCKET_S, BUCKETS - 1, 0)
    max_qps = max(1, max((b[1] for b in window), default=0)) * BUCKETS / (BUCKETS * BUCKET_S)
    min_rt = max(1.0, min((b[2] for b in window), default=STATISTIC_MAX_RT_MS))
    return max_qps * min_rt / 1000.0


def _admit_bbr(limit: float, in_flight: float, memo: Memo, now: float, cost: float,
               p: Params) -> tuple[bool, float, Memo]:
    limit = p.max_limit
    if memo[2] > p.sentinel_load_threshold:
        cap = capacity(memo, now)
        limit = min(limit, max(1.0, cap))
        if in_flight > 1 and in_flight > cap:
            return False, limit, memo
    return cost <= math.floor(p.max_limit) - in_flight, limit, memo


def _admit_cpu(limit: float, in_flight: float, memo: Memo, now: float, cost: float,
               p: Params) -> tuple[bool, float, Memo]:
    if memo[1] > p.cpu_threshold:
        return False, 0.0, memo
    return cost <= math.floor(p.max_limit) - in_flight, p.max_limit, memo


def _read(limit: float, memo: Memo, now: float, reading: Reading, p: Params) -> tuple[float, Memo]:
    return limit, (memo[0], reading.cpu, reading.load)


def _read_cpu(limit: float, memo: Memo, now: float, reading: Reading, p: Params) -> tuple[float, Memo]:
    """The shown limit follows the reading at once: 0 while over the threshold."""
    return (0.0 if reading.cpu > p.cpu_threshold else p.max_limit), (memo[0], reading.cpu, reading.load)


def _check_load(p: Params) -> None:
    require_at_least("sentinel_bbr", p, "sentinel_load_threshold", 0)


def _check_cpu(p: Params) -> None:
    require_cpu_threshold("sentinel_cpu", p)


def _ignore_latency(limit: float, in_flight: float, memo: Memo, *_: object) -> tuple[float, Memo]:
    """The CPU rule reads no latency: no bucket bookkeeping on the per-request path."""
    return limit, memo


SENTINEL_BBR = Rule("sentinel_bbr", _fresh, _sample, _check_load, admit=_admit_bbr, read=_read, reads=True)
SENTINEL_CPU = Rule("sentinel_cpu", _fresh, _ignore_latency, _check_cpu, admit=_admit_cpu, read=_read_cpu,
                    reads=True)
