"""One colour per algorithm, for every chart, the report's tables and the terminal.

matplotlib's tab10 in docs/architecture.md's algorithm order, so that fixed_window is the same blue in the
over-admission bars, the envelope panels, the report's answer sentences and the terminal."""

from __future__ import annotations

import html
import re

from contract.schema import ALGORITHM_NAMES

TAB10 = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
PALETTE = dict(zip(ALGORITHM_NAMES, TAB10))
OTHER_COLOUR = "#444444"
_NAMES = re.compile(r"\b(" + "|".join(sorted(ALGORITHM_NAMES, key=len, reverse=True)) + r")\b")


def colour(algorithm: str) -> str:
    return PALETTE.get(algorithm, OTHER_COLOUR)


def rich_markup(text: str) -> str:
    """``text`` with every algorithm name in its colour, for rich (other brackets escaped)."""
    from rich.markup import escape

    return _NAMES.sub(lambda m: f"[bold {colour(m[1])}]{m[1]}[/]", escape(text))


def html_markup(text: str) -> str:
    """``text`` escaped for HTML, every algorithm name in its colour."""
    return _NAMES.sub(lambda m: f"<span class='alg' style='color:{colour(m[1])}'>{m[1]}</span>", html.escape(text))
