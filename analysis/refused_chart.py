"""The would-be-refused chart of `validate --traffic`: refused requests per time bin, one line
per candidate policy (and timing), as inline SVG for the report's section. Plain arrays in, so
the chart knows nothing of the harness that judged them."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from .figure import new_figure
from .palette import TAB10


def refused_over_time_svg(series: Mapping[str, tuple[float, int, Sequence[int]]], requests: Sequence[int]) -> str:
    """``series``: label -> (first bin's epoch start, bin width s, refused per bin); ``requests``:
    all requests per bin (drawn grey behind, so a refusal peak reads against the load)."""
    fig = new_figure(figsize=(9, 3.2), layout="constrained")
    ax = fig.add_subplot()
    start, bin_s = next(iter(series.values()))[:2] if series else (0.0, 1)
    first = datetime.fromtimestamp(start, tz=UTC)
    x = [i * bin_s for i in range(len(requests))]
    ax.fill_between(x, requests, step="post", color="#dddddd", label="requests")
    for (label, (_s, _b, refused)), color in zip(series.items(), TAB10 * 4):
        ax.step([i * bin_s for i in range(len(refused))], refused, where="post", color=color, label=f"refused: {label}")
    ax.set_xlabel(f"seconds since {first:%Y-%m-%d %H:%M:%S} UTC (bins of {bin_s} s)")
    ax.set_ylabel("requests per bin")
    ax.legend(fontsize=8, loc="upper right")
    out = io.StringIO()
    fig.savefig(out, format="svg")
    return out.getvalue()
