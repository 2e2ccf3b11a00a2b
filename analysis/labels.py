"""How a policy and a figure are written, one place for every chart, table, answer and the
terminal: a panel or sentence that names its policy says it the same way everywhere."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def num(value: float) -> str:
    """A figure as prose writes it: thousands separated, three significant digits below 100."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def policy_text(limit: float, window_s: float, burst: float | None) -> str:
    """``L 50 per 1 s, burst 10``: the policy every panel and table names (burst only when it
    differs from L)."""
    text = f"L {num(limit)} per {window_s:g} s"
    return text if burst is None or burst == limit else f"{text}, burst {num(burst)}"


def gateway_text(gateway: Mapping[str, float] | None) -> str:
    """`` + bucket 300/s, burst 16``: a gateway's token bucket in front of a limiter, as a rule's
    name carries it (nothing without one)."""
    return "" if not gateway else f" + bucket {num(gateway['rate'])}/s, burst {num(gateway['burst'])}"


def row_policy(row: Mapping[str, Any]) -> str:
    """A summary row's policy (``limit``, ``window_s``, ``burst``)."""
    return policy_text(row["limit"], row["window_s"], row.get("burst"))


FIGURES: dict[str, tuple[str, str, float]] = {
    "requests": ("requests", "{:,.0f}", 1.0),
    "latency_p50_intended_ms": ("P50 (ms)", "{:,.1f}", 1.0),
    "latency_p99_intended_ms": ("P99 (ms)", "{:,.1f}", 1.0),
    "rejected_rate": ("rejected (%)", "{:,.1f}", 100.0),
    "rejected_legit_rate": ("legit rejected (%)", "{:,.2f}", 100.0),
    "rejected_abusive_rate": ("abusive rejected (%)", "{:,.1f}", 100.0),
    "cpu_target_ms_per_1k": ("target CPU (ms / 1k req)", "{:,.1f}", 1.0),
    "cpu_target_us_per_req": ("marginal CPU (µs / req)", "{:,.1f}", 1.0),
    "cpu_target_idle_ms_per_s": ("idle CPU (ms / s)", "{:,.1f}", 1.0),
    "cpu_generator_ms_per_1k": ("generator CPU (ms / 1k req)", "{:,.1f}", 1.0),
    "over_admission": ("over-admission (x L)", "{:,.2f}", 1.0),
    "in_flight_ratio": ("peak in flight (x bound)", "{:,.2f}", 1.0),
    "false_admits": ("admitted, sliding log refused", "{:,.0f}", 1.0),  # a bucket's burst by design: not "false"
    "false_rejects": ("refused, sliding log admitted", "{:,.0f}", 1.0),
    "legit_fairness_jain": ("Jain (legit)", "{:.3f}", 1.0),
    "goodput_rps": ("goodput (/s)", "{:,.1f}", 1.0),
    "time_to_recover_s": ("recovery (s)", "{:,.1f}", 1.0),
    "header_truthfulness": ("Retry-After truthful (%)", "{:,.1f}", 100.0),
    "goodput_in_bound_rps": ("goodput in bound (/s)", "{:,.1f}", 1.0),
    "limit_react_s": ("react (s)", "{:,.2f}", 1.0),
    "limit_recover_s": ("recover (s)", "{:,.2f}", 1.0),
    "limit_mean": ("limit mean", "{:,.1f}", 1.0),
    "limit_cov": ("limit CoV", "{:.3f}", 1.0),
    "refused_by_gateway": ("refused by the bucket", "{:,.0f}", 1.0),
}
"""Every summary field a table shows: its header (the unit in it) and how a cell writes it (plain
numbers, ``scale`` applied). The report's full and compact tables and compare all read it here."""


HEAD_TO_HEAD = ("goodput_in_bound_rps", "latency_p99_intended_ms", "rejected_legit_rate", "refused_by_gateway",
                "limit_react_s", "limit_recover_s", "limit_mean", "limit_cov")
"""The adaptive head to head's figures, in the report's tables and the terminal's (the rule and the
way the downstream broke name each row)."""


def header(field: str) -> str:
    return FIGURES[field][0]


def cell(field: str, value: float) -> str:
    """A field's figure as every table writes it (``0.5`` of ``rejected_rate``: ``50.0``)."""
    _, fmt, scale = FIGURES[field]
    return fmt.format(scale * value)
