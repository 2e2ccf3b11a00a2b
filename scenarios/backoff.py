"""Retry delays, as in the AWS Architecture Blog's "Exponential Backoff And Jitter" study.

``n`` counts retries from 0 (the delay before the first retry uses n = 0). Pure: the caller
draws the uniform numbers, so a seeded model and a live client get the same delays.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, get_args

Backoff = Literal["none", "fixed", "exponential", "full_jitter", "equal_jitter", "decorrelated"]
POLICIES: tuple[str, ...] = get_args(Backoff)
"""none: retry at once; fixed: base each time; the rest as in the study."""


def delays(policy: str, base_s: float, cap_s: float, uniforms: Sequence[float]) -> list[float]:
    """The delay before each retry, one per uniform number in [0, 1)."""
    out: list[float] = []
    prev = base_s
    for n, u in enumerate(uniforms):
        ceiling = min(cap_s, base_s * 2.0**n)
        if policy == "none":
            d = 0.0
        elif policy == "fixed":
            d = base_s
        elif policy == "exponential":
            d = ceiling
        elif policy == "full_jitter":
            d = u * ceiling
        elif policy == "equal_jitter":
            d = ceiling / 2 + u * ceiling / 2
        elif policy == "decorrelated":
            d = min(cap_s, base_s + u * (prev * 3 - base_s))
            prev = d
        else:
            raise ValueError(f"unknown backoff policy {policy!r}; choose from: {', '.join(POLICIES)}")
        out.append(d)
    return out
