"""Netflix concurrency-limits' limit algorithms (github.com/Netflix/concurrency-limits,
``concurrency-limits-core/.../limit/``): ``Gradient2Limit``, ``AIMDLimit``, ``VegasLimit``.

Behaviour ported from the Java sources, not code. In all three the sample's ``in_flight`` is
the count when the request completes (it still counts itself); the Java limiter passes the
count when the request was admitted: the pure interface carries a latency only. Neither sees
``didDrop`` (a request the caller dropped): a downstream that answers 503 fast reads as fast.
"""

from __future__ import annotations

import math

from .base import Memo, Params, Rule, clamp, log10_root, refuse, require_at_least, seeded_uniform

WARMUP_SAMPLES = 10
"""Gradient2's long RTT (``ExpAvgMeasurement(longWindow, 10)``): a plain average of the first 10."""
MIN_RTT_S = 1e-6


def _gradient2_fresh(p: Params) -> tuple[float, Memo]:
    return p.initial_limit, (0.0, 0, 0.0)  # (long RTT, samples, their sum while warming up)


def _gradient2_sample(limit: float, in_flight: float, memo: Memo, now: float, rtt_s: float,
                      p: Params) -> tuple[float, Memo]:
    """``Gradient2Limit._update``: the long RTT (average, then EMA over ``long_window``) against
    this sample; ``gradient = clamp(tolerance * long / rtt, 0.5, 1)``,
    ``limit = limit * (1 - smoothing) + (limit * gradient + queue_size) * smoothing``. When the
    long RTT is over twice the sample it is decayed by 5% for the NEXT samples (this one still
    uses the undecayed value, as the source does); no change while app-limited
    (in flight < limit / 2). Defaults as the source: smoothing 0.2, tolerance 1.5, window 600,
    queue 4 (its min 20 / max 200 / initial 20 come from the policy here). While warming up,
    ``ExpAvgMeasurement`` averages its own running ``sum``: a decay changes only the value, and
    the next warm-up sample overwrites it."""
    long_rtt, samples, total = memo
    rtt = max(rtt_s, MIN_RTT_S)
    if samples < WARMUP_SAMPLES:
        total += rtt
        long_rtt = total / (samples + 1)
    else:
        factor = 2.0 / (p.long_window + 1)
        long_rtt = long_rtt * (1.0 - factor) + rtt * factor
    stored = long_rtt * 0.95 if long_rtt / rtt > 2.0 else long_rtt
    memo = (stored, samples + 1, total)
    if in_flight < limit / 2:
        return limit, memo
    gradient = clamp(p.tolerance * long_rtt / rtt, 0.5, 1.0)
    target = limit * gradient + p.queue_size
    return clamp(limit * (1.0 - p.smoothing) + target * p.smoothing, p.min_limit, p.max_limit), memo


def _gradient2_check(p: Params) -> None:
    if not 0 < p.smoothing <= 1:
        raise refuse("gradient2", "smoothing", p.smoothing, "0 < smoothing <= 1")
    if not p.tolerance >= 1:
        raise refuse("gradient2", "tolerance", p.tolerance, "tolerance >= 1 (Gradient2Limit's check)")
    if p.long_window < 1:
        raise refuse("gradient2", "long_window", p.long_window, "long_window >= 1")
    require_at_least("gradient2", p, "queue_size", 0)


def _aimd_fresh(p: Params) -> tuple[float, Memo]:
    return p.initial_limit, ()


def _aimd_sample(limit: float, in_flight: float, memo: Memo, now: float, rtt_s: float,
                 p: Params) -> tuple[float, Memo]:
    """``AIMDLimit._update``: a sample slower than ``timeout_s`` multiplies the (integer) limit
    by ``backoff_ratio``, truncated; otherwise, when at least half the limit is in use, it grows
    by ``increase``. Source defaults: backoff 0.9, increase 1, timeout 5 s (0.25 s here: the
    bench's downstream answers in tens of ms)."""
    if rtt_s > p.timeout_s:
        limit = math.floor(limit * p.backoff_ratio)
    elif in_flight * 2 >= limit:
        limit += p.increase
    return clamp(limit, p.min_limit, p.max_limit), memo


def _aimd_check(p: Params) -> None:
    if not 0.5 <= p.backoff_ratio < 1:
        raise refuse("aimd", "backoff_ratio", p.backoff_ratio, "0.5 <= backoff_ratio < 1 (AIMDLimit's check)")
    require_at_least("aimd", p, "increase", 0)


def _vegas_fresh(p: Params) -> tuple[float, Memo]:
    # (rtt_noload, samples since the last probe, probes so far, this probe's jitter)
    return p.initial_limit, (0.0, 0, 0, 0.5 + 0.5 * seeded_uniform(p.seed, 0))


def _vegas_sample(limit: float, in_flight: float, memo: Memo, now: float, rtt_s: float,
                  p: Params) -> tuple[float, Memo]:
    """``VegasLimit._update``: the queue estimate ``ceil(limit * (1 - rtt_noload / rtt))``
    against alpha/beta/threshold = 3/6/1 x log10root(limit): at most the threshold grows by
    beta, under alpha by log10root, over beta shrinks by log10root, else stays; smoothing 1.0.
    ``rtt_noload`` is the lowest sample seen, re-probed (taken from the next sample, whatever it
    is) every ``jitter * probe_multiplier * limit`` samples, jitter seeded in [0.5, 1)."""
    noload, count, probes, jitter = memo
    count += 1
    if jitter * p.vegas_probe_multiplier * limit <= count:
        probes += 1
        return limit, (rtt_s, 0, probes, 0.5 + 0.5 * seeded_uniform(p.seed, probes))
    if noload == 0 or rtt_s < noload:
        return limit, (rtt_s, count, probes, jitter)
    memo = (noload, count, probes, jitter)
    if in_flight * 2 < limit:
        return limit, memo
    queue = math.ceil(limit * (1 - noload / rtt_s))
    step = log10_root(limit)
    if queue <= step:
        new = limit + p.vegas_beta * step
    elif queue < p.vegas_alpha * step:
        new = limit + step
    elif queue > p.vegas_beta * step:
        new = limit - step
    else:
        return limit, memo
    new = clamp(new, p.min_limit, p.max_limit)
    return (1 - p.vegas_smoothing) * limit + p.vegas_smoothing * new, memo


def _vegas_check(p: Params) -> None:
    if not 0 < p.vegas_alpha <= p.vegas_beta:
        raise refuse("vegas", "vegas_alpha", p.vegas_alpha, f"0 < vegas_alpha <= vegas_beta ({p.vegas_beta})")
    if not 0 < p.vegas_smoothing <= 1:
        raise refuse("vegas", "vegas_smoothing", p.vegas_smoothing, "0 < vegas_smoothing <= 1")
    if not p.vegas_probe_multiplier > 0:
        raise refuse("vegas", "vegas_probe_multiplier", p.vegas_probe_multiplier, "vegas_probe_multiplier > 0")


GRADIENT2 = Rule("gradient2", _gradient2_fresh, _gradient2_sample, _gradient2_check)
AIMD = Rule("aimd", _aimd_fresh, _aimd_sample, _aimd_check)
VEGAS = Rule("vegas", _vegas_fresh, _vegas_sample, _vegas_check)
