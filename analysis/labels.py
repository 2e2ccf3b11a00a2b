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


def row_policy(row: Mapping[str, Any]) -> str:
    """A summary row's policy (``limit``, ``window_s``, ``burst``)."""
    return policy_text(row["limit"], row["window_s"], row.get("burst"))
