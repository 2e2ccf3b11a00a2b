"""Envoy's adaptive concurrency filter, gradient controller
(``source/extensions/filters/http/adaptive_concurrency/controller/gradient_controller.cc``).

Every ``envoy_interval_s`` the latencies sampled since the last update are reduced to one
percentile (``sample_rtt``) and the limit moves by
``gradient = clamp(min_rtt * (1 + buffer) / sample_rtt, 0.5, 2)``:
``limit = int(limit * gradient + sqrt(limit * gradient))`` within [min_concurrency, max].
``min_rtt`` is measured, not remembered: every ``envoy_min_rtt_interval_s`` (plus seeded jitter)
the limit is pinned to ``min_concurrency`` until ``envoy_request_count`` requests complete, and
their percentile is the new ``min_rtt``; five updates in a row at the minimum start a
measurement at once. The controller starts in a measurement. Defaults as Envoy's: percentile 50,
request count 50, min concurrency 3, buffer 25%, jitter 15%, max from the policy (Envoy: 1000);
the two intervals have no default there (its docs use 0.1 s and 60 s, as here).

Envoy's timers fire on their own; here they fire at the first decision or sample after their
deadline (nothing can be decided in between, so no decision differs). Envoy's percentile comes
from an approximate histogram; here it is the exact nearest-rank value.
"""

from __future__ import annotations

import math

from .base import Memo, Params, Rule, refuse, require_at_least, seeded_uniform

# memo: (min_rtt, samples, next_update, next_min_rtt, measuring, deferred, epoch, at_min, draws, count);
# samples: a cons list ``(rtt, older)`` (``()`` empty), so a completion adds one in O(1), not a tuple copy
MIN_RTT, SAMPLES, NEXT_UPDATE, NEXT_MIN_RTT, MEASURING, DEFERRED, EPOCH, AT_MIN, DRAWS, COUNT = range(10)
AT_MIN_REMEASURE = 5


def percentile(samples: tuple, q: float) -> float:
    """Nearest rank over a cons list of samples: the smallest with at least q% at or below it."""
    flat = []
    while samples:
        flat.append(samples[0])
        samples = samples[1]
    flat.sort()
    return flat[max(0, math.ceil(q / 100 * len(flat)) - 1)]


def _fresh(p: Params) -> tuple[float, Memo]:
    low = float(p.envoy_min_concurrency)
    return low, (0.0, (), 0.0, math.inf, True, low, -math.inf, 0, 0, 0)


def _enter_measurement(limit: float, memo: Memo, at: float, p: Params) -> tuple[float, Memo]:
    m = list(memo)
    m[MEASURING], m[DEFERRED], m[SAMPLES], m[COUNT], m[EPOCH], m[AT_MIN] = True, limit, (), 0, at, 0
    return float(p.envoy_min_concurrency), tuple(m)


def _new_limit(limit: float, sample_rtt: float, min_rtt: float, p: Params) -> float:
    gradient = min(2.0, max(0.5, min_rtt * (1 + p.envoy_buffer) / sample_rtt))
    scaled = limit * gradient
    return float(min(p.max_limit, max(p.envoy_min_concurrency, math.floor(scaled + math.sqrt(scaled)))))


def _tick(limit: float, memo: Memo, now: float, p: Params) -> tuple[float, Memo]:
    """Fire the timers due at ``now``: the update of the sample window, then the periodic (or
    forced) minRTT measurement."""
    if memo[MEASURING] or (now < memo[NEXT_UPDATE] and now < memo[NEXT_MIN_RTT]):
        return limit, memo  # no timer due: the common case, no copy
    m = list(memo)
    if now >= m[NEXT_UPDATE]:
        if m[SAMPLES]:
            new = _new_limit(limit, percentile(m[SAMPLES], p.envoy_percentile), m[MIN_RTT], p)
            low = p.envoy_min_concurrency
            m[AT_MIN] = m[AT_MIN] + 1 if limit == low and new == low else 0
            limit, m[SAMPLES], m[COUNT] = new, (), 0
        due = m[NEXT_UPDATE]
        m[NEXT_UPDATE] = due + p.envoy_interval_s * (math.floor((now - due) / p.envoy_interval_s) + 1)
        if m[AT_MIN] >= AT_MIN_REMEASURE:
            return _enter_measurement(limit, tuple(m), due, p)
    if now >= m[NEXT_MIN_RTT]:
        return _enter_measurement(limit, tuple(m), m[NEXT_MIN_RTT], p)
    return limit, tuple(m)


def _sample(limit: float, in_flight: float, memo: Memo, now: float, rtt_s: float,
            p: Params) -> tuple[float, Memo]:
    limit, memo = _tick(limit, memo, now, p)
    if now - rtt_s < memo[EPOCH]:
        return limit, memo  # started before the measurement: not a minimum-concurrency latency
    m = list(memo)
    m[SAMPLES], m[COUNT] = (rtt_s, m[SAMPLES]), m[COUNT] + 1
    if m[MEASURING] and m[COUNT] >= p.envoy_request_count:
        m[MIN_RTT], limit = percentile(m[SAMPLES], p.envoy_percentile), m[DEFERRED]
        m[DRAWS] += 1
        jitter = p.envoy_min_rtt_interval_s * p.envoy_jitter * seeded_uniform(p.seed, m[DRAWS])
        m[NEXT_MIN_RTT] = now + p.envoy_min_rtt_interval_s + jitter
        m[NEXT_UPDATE] = now + p.envoy_interval_s
        m[MEASURING], m[SAMPLES], m[COUNT] = False, (), 0
    return limit, tuple(m)


def _admit(limit: float, in_flight: float, memo: Memo, now: float, cost: float,
           p: Params) -> tuple[bool, float, Memo]:
    limit, memo = _tick(limit, memo, now, p)
    return cost <= math.floor(limit) - in_flight, limit, memo


def _check(p: Params) -> None:
    if not 0 < p.envoy_percentile < 100:
        raise refuse("envoy", "envoy_percentile", p.envoy_percentile, "0 < envoy_percentile < 100")
    for name in ("envoy_interval_s", "envoy_min_rtt_interval_s"):
        require_at_least("envoy", p, name, 0, strict=True)
    if p.envoy_request_count < 1:
        raise refuse("envoy", "envoy_request_count", p.envoy_request_count, "envoy_request_count >= 1")
    if not 1 <= p.envoy_min_concurrency <= p.max_limit:
        raise refuse("envoy", "envoy_min_concurrency", p.envoy_min_concurrency,
                     f"1 <= envoy_min_concurrency <= max_limit ({p.max_limit})")
    if not 0 <= p.envoy_jitter <= 1:
        raise refuse("envoy", "envoy_jitter", p.envoy_jitter, "0 <= envoy_jitter <= 1")
    require_at_least("envoy", p, "envoy_buffer", 0)


ENVOY = Rule("envoy", _fresh, _sample, _check, admit=_admit)
