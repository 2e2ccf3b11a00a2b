"""Pass/fail thresholds for `validate`, written k6-style: ``[LIMIT.]METRIC OP NUMBER``.

Pure parsing and comparison, so that the policy file model can reject a malformed threshold
with its field path before anything is simulated.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

SIM_METRICS: dict[str, str] = {
    "legit_rejection_rate": "share of legitimate requests rejected (page-load users at their peak rate)",
    "page_load_429_rate": "share of page loads that see at least one 429",
    "abusive_admission": "abusive client's max admitted cost in any window W, / L",
    "nat_legit_rejection_rate": "share of legitimate requests rejected when the expected clients share one NAT address",
    "over_admission": "max admitted cost in any window W / L under boundary burst and adversarial drip",
    "node_down_legit_rejection_rate": "legit_rejection_rate with one node down",
    "node_down_over_admission": "over_admission with one node down",
    "store_down_legit_rejection_rate": "legit_rejection_rate with the shared store down",
    "store_down_over_admission": "over_admission with the shared store down",
}
"""Every simulated metric a threshold may name, with what it measures."""
LIVE_METRICS: dict[str, str] = {
    "live_p99_ms": "P99 latency (ms, from the intended send time) of admitted legitimate requests, live",
    "live_cpu_ms_per_1k": "target CPU ms per 1,000 requests during the live page-load run",
    "live_legit_rejection_rate": "share of legitimate requests answered 429 during the live page-load run",
    "live_nat_legit_rejection_rate": "the same with the expected NAT clients behind one address, live",
    "live_over_admission": "max admitted cost in any window W / L under a live boundary burst",
}
"""What `validate --live` measures over HTTP (validate_live)."""
POLICY_WIDE = ("live_p99_ms", "live_cpu_ms_per_1k", "live_legit_rejection_rate", "live_nat_legit_rejection_rate")
"""Measured on the layered policy as a whole: a threshold on them cannot name a limit."""
METRICS = {**SIM_METRICS, **LIVE_METRICS}

DEFAULTS: tuple[str, ...] = (
    "legit_rejection_rate < 0.001",
    "page_load_429_rate < 0.001",
    "abusive_admission <= 1.25",
    "nat_legit_rejection_rate < 0.01",
    "over_admission <= 1.25",
    "node_down_legit_rejection_rate < 0.01",
    "node_down_over_admission <= 1.25",
    "store_down_legit_rejection_rate < 0.01",
    "store_down_over_admission <= 1.25",
    "live_p99_ms < 500",
    "live_cpu_ms_per_1k < 5000",
)
FALLBACK = {
    "live_legit_rejection_rate": "legit_rejection_rate",
    "live_nat_legit_rejection_rate": "nat_legit_rejection_rate",
    "live_over_admission": "over_admission",
}
"""A live twin of a simulated metric is held to the simulated metric's bar unless the file sets its own."""

_OPS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le, ">=": operator.ge, "==": operator.eq, "!=": operator.ne, "<": operator.lt, ">": operator.gt,
}
_PATTERN = re.compile(
    r"^\s*(?:(?P<limit>[A-Za-z0-9_-]+)\.)?(?P<metric>[a-z_0-9]+)\s*(?P<op><=|>=|==|!=|<|>)\s*(?P<value>\S+)\s*$"
)


@dataclass(frozen=True)
class Threshold:
    metric: str
    op: str
    value: float
    limit: str | None = None
    """Applies to this limit only; ``None`` applies to every limit."""

    def holds(self, measured: float) -> bool:
        return _OPS[self.op](measured, self.value)

    def __str__(self) -> str:
        scope = f"{self.limit}." if self.limit else ""
        return f"{scope}{self.metric} {self.op} {self.value:g}"


def parse_threshold(text: str) -> Threshold:
    """``"over_admission <= 1.1"`` or ``"login-ip.over_admission <= 2"``; ValueError names the problem."""
    m = _PATTERN.match(text)
    if m is None:
        raise ValueError(f"expected '[LIMIT.]METRIC OP NUMBER' with OP one of {' '.join(_OPS)}, got {text!r}")
    if m["metric"] not in METRICS:
        raise ValueError(f"unknown metric {m['metric']!r}; choose from: {', '.join(METRICS)}")
    if m["limit"] and m["metric"] in POLICY_WIDE:
        raise ValueError(f"{m['metric']} is measured on the whole policy: drop {m['limit'] + '.'!r}")
    try:
        value = float(m["value"])
    except ValueError:
        raise ValueError(f"threshold value must be a number, got {m['value']!r}") from None
    return Threshold(m["metric"], m["op"], value, m["limit"])


def effective(metric: str, limit: str | None, custom: Iterable[Threshold]) -> Threshold:
    """The threshold for one limit's metric (``limit`` None: the whole policy's): limit-scoped beats
    file-wide beats the default; a live twin without one of its own takes its simulated metric's."""
    custom = list(custom)
    for name in (metric, FALLBACK.get(metric)):
        for scope in (limit, None):
            for t in reversed(custom):
                if t.metric == name and t.limit == scope:
                    return replace(t, metric=metric)
    default = FALLBACK.get(metric, metric)
    return replace(next(t for t in map(parse_threshold, DEFAULTS) if t.metric == default), metric=metric)
