"""Netflix concurrency-limits' ``WindowedLimit`` (``limit/WindowedLimit.java`` with its default
``ImmutableAverageSampleWindow``), as an option wrapping any rule: samples are gathered into a
window and the wrapped rule sees one sample per window (the average latency and the most
requests seen in flight), so one slow request does not move the limit.
"""

from __future__ import annotations

import dataclasses
import math

from .base import Memo, Params, Rule, clamp, refuse, require_at_least

MIN_WINDOW_S = 0.1
MIN_WINDOW_SIZE = 10
EMPTY = (math.inf, 0.0, 0.0, 0)
"""An empty window: (lowest rtt, sum of rtts, most in flight, samples)."""


def _check(p: Params) -> None:
    for name in ("window_min_s", "window_max_s"):  # WindowedLimit.Builder's checks
        require_at_least("windowed", p, name, MIN_WINDOW_S)
    if p.window_max_s < p.window_min_s:
        raise refuse("windowed", "window_max_s", p.window_max_s, f">= window_min_s ({p.window_min_s})")
    if p.window_size < MIN_WINDOW_SIZE:
        raise refuse("windowed", "window_size", p.window_size, f"window_size >= {MIN_WINDOW_SIZE}")
    require_at_least("windowed", p, "window_min_rtt_s", 0)


def windowed(rule: Rule) -> Rule:
    """``rule`` fed once per window. Defaults as the source: windows of 1 s (min = max = 1 s,
    else twice the window's lowest latency between them), at least 10 samples, samples under
    100 µs ignored. memo = (next window end, open window, the rule's memo)."""

    def fresh(p: Params) -> tuple[float, Memo]:
        limit, inner = rule.fresh(p)
        return limit, (0.0, EMPTY, inner)

    def sample(limit: float, in_flight: float, memo: Memo, now: float, rtt_s: float,
               p: Params) -> tuple[float, Memo]:
        next_at, (low, total, most, count), inner = memo
        if rtt_s < p.window_min_rtt_s:
            return limit, memo
        low, total, most, count = min(low, rtt_s), total + rtt_s, max(most, in_flight), count + 1
        if now <= next_at:
            return limit, (next_at, (low, total, most, count), inner)
        next_at = now + clamp(low * 2, p.window_min_s, p.window_max_s)
        if count >= p.window_size:
            limit, inner = rule.sample(limit, most, inner, now, total / count, p)
        return limit, (next_at, EMPTY, inner)

    def admit(limit: float, in_flight: float, memo: Memo, now: float, cost: float,
              p: Params) -> tuple[bool, float, Memo]:
        allowed, limit, inner = rule.admit(limit, in_flight, memo[2], now, cost, p)
        return allowed, limit, (memo[0], memo[1], inner)

    def read(limit: float, memo: Memo, now: float, reading: object, p: Params) -> tuple[float, Memo]:
        limit, inner = rule.read(limit, memo[2], now, reading, p)
        return limit, (memo[0], memo[1], inner)

    def released(limit: float, memo: Memo, in_flight: float, p: Params) -> tuple[float, Memo]:
        limit, inner = rule.released(limit, memo[2], in_flight, p)
        return limit, (memo[0], memo[1], inner)

    def check(p: Params) -> None:
        rule.check(p)
        _check(p)

    return dataclasses.replace(rule, name=f"windowed {rule.name}",
                               fresh=fresh, sample=sample, admit=admit, read=read, released=released, check=check)
