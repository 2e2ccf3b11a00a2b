"""A verdict on an approximate model (a product that documents targets, not its exact behaviour:
AWS API Gateway, Cloudflare): every simulated figure is labelled approximate with the reason, and
a check whose threshold needs the exact decision (a burst's over-admission, which turns on the
last request at a window's edge) says n/a rather than pass or fail: the model cannot tell."""

from __future__ import annotations

from dataclasses import replace

from .checks import CheckVerdict, split

NEEDS_EXACT = ("over_admission", "abusive_admission")
"""Ratios of what got through at a burst's edge: the decisions an approximate model may get wrong."""


def labelled(verdicts: list[CheckVerdict], reason: str) -> list[CheckVerdict]:
    """``verdicts`` with each simulated row marked approximate (``≈``, the reason in its message);
    those of ``NEEDS_EXACT`` n/a: not failed, not passed, the model's figure kept beside."""
    out = []
    for v in verdicts:
        if v.kind != "simulation":
            out.append(v)
        elif split(v.metric)[1] in NEEDS_EXACT:
            out.append(replace(v, display=f"≈ {v.display}", passed=True, na=True, suggestion=None, fix=None,
                               message=f"n/a: the figure needs exact decisions; approximate: {reason}"))
        else:
            out.append(replace(v, display=f"≈ {v.display}", message=f"{v.message} (approximate: {reason})"))
    return out
