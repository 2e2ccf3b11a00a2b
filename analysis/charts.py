"""The comparison charts (matplotlib, Agg, no pyplot state): PNG and SVG under ``charts/``.

Every figure is drawn for the report's width (at most WIDTH_IN inches at DPI: shown at its
natural size in a 1,400 px page), one colour per algorithm (``palette``), small multiples rather
than many lines on one axis, log axes where values span decades (the captions say so), and panel
titles computed from the data they title. A chart whose data is absent is not drawn.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from concurrent.futures import Executor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from contract.atomic import atomic_write
from contract.schema import ALGORITHM_NAMES, CHARTS_DIR, split_repeat

from . import ramp
from .adaptive import break_window
from .analyze import CALLS_BIN_S, LATENCY_SCENARIO, RunAnalysis
from .answers import backoff
from .figure import new_figure
from .labels import policy_text
from .loader import ResultsError
from .palette import colour
from .spread import group_name
from .theory import envelope_bound, over_admission_bound

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

FIXED_WINDOW_LINE = 2.0
"""The fixed window's bound (2L in any W): drawn only in a panel holding an algorithm it bounds."""

FORMATS = ("png", "svg")
DPI = 110
WIDTH_IN = 12.2
"""The widest figure: 1,342 px at DPI, the report's column at 1,400 px."""
CONTEXT = "#d0d0d0"  # the other runs, behind a small multiple's own run


@dataclass(frozen=True)
class Chart:
    name: str  # file stem: the spec's name, then ``-<scenario>`` for a chart of one scenario
    title: str
    caption: str
    spec: str
    scenario: str | None = None  # None: the chart spans the campaign's scenarios

    def files(self, root: Path) -> dict[str, Path]:
        return {fmt: root / CHARTS_DIR / f"{self.name}.{fmt}" for fmt in FORMATS}


def _order(runs: Sequence[RunAnalysis]) -> list[RunAnalysis]:
    rank = {name: i for i, name in enumerate(ALGORITHM_NAMES)}
    return sorted(runs, key=lambda a: (rank.get(a.run.info.algorithm, len(rank)), a.run.info.algorithm, a.run.name))


def _by_scenario(runs: Sequence[RunAnalysis]) -> dict[str, list[RunAnalysis]]:
    out: dict[str, list[RunAnalysis]] = {}
    for a in runs:
        out.setdefault(a.run.info.scenario, []).append(a)
    return {s: _order(v) for s, v in out.items()}


def _facets(n: int, title: str, cols: int, height: float, share: bool = False) -> tuple[Figure, list[Axes]]:
    """``n`` panels, ``cols`` to a row, the figure WIDTH_IN wide (narrower when fewer panels)."""
    used = max(1, min(cols, n))
    rows = -(-n // used)
    fig = new_figure(figsize=(max(0.5, used / cols) * WIDTH_IN, height * rows + 0.5), layout="constrained")
    axes = list(np.atleast_1d(fig.subplots(rows, used, squeeze=False, sharex=share, sharey=share)).ravel())
    for ax in axes[n:]:
        ax.set_visible(False)
    fig.suptitle(title, fontsize=12 if used == cols else 10, fontweight="bold", wrap=True)  # a narrow figure: its title wraps
    return fig, axes[:n]


def _label(a: RunAnalysis) -> str:
    i = a.run.info
    return i.algorithm if i.store == "memory" else f"{i.algorithm} ({i.store})"


def _panel_title(ax: Axes, a: RunAnalysis, measured: str) -> None:
    """The run on one line, what it measured on the next: long algorithm names never collide."""
    ax.set_title(f"{_label(a)}\n{measured}", fontsize=9, color=colour(a.run.info.algorithm), linespacing=1.1)


def _legend(fig: Figure, axes: Sequence[Axes], title: str | None = None) -> None:
    """One legend for the figure, under the panels: the same algorithm has one colour in every panel;
    in as many rows as it takes to stay inside the figure's frame (a one-panel figure is narrow)."""
    unique: dict[str, object] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            unique.setdefault(label, handle)
    for ncol in range(min(len(unique), 6), 0, -1):  # as many columns as the figure's width holds: never cut off
        legend = fig.legend(list(unique.values()), list(unique), loc="outside lower center", fontsize=8, title=title,
                            ncol=ncol, frameon=False)
        if ncol == 1 or legend.get_window_extent().width <= fig.bbox.width:
            return
        legend.remove()


def _save(fig: Figure, chart: Chart, root: Path) -> None:
    """Lay out once, then write both formats (constrained layout would run again per file)."""
    fig.draw_without_rendering()
    fig.set_layout_engine("none")
    for fmt, path in chart.files(root).items():
        atomic_write(path, lambda tmp, fmt=fmt: fig.savefig(tmp, format=fmt, dpi=DPI))


def _times(v: float) -> str:
    return f"{v:.2f}x" if v < 10 else f"{v:.1f}x" if v < 100 else f"{v:,.0f}x"


def _log_ticks(ax: Axes, lo: float, hi: float) -> None:
    """Ticks at powers of two, labelled as multiples of L."""
    from matplotlib.ticker import FixedLocator, NullLocator

    ticks = [2.0 ** k for k in range(int(np.floor(np.log2(lo))), int(np.ceil(np.log2(hi))) + 1)]
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.set_yticklabels([f"{t:g}x" for t in ticks], fontsize=8)


def _plain_log_y(ax: Axes) -> None:
    """Log ticks at 1, 2, 5 x 10^k written as plain numbers: a narrow range still gets several."""
    from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter

    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.yaxis.set_minor_formatter(NullFormatter())


def panel_policy(rs: Sequence[RunAnalysis]) -> str:
    """The one policy a panel's runs share (checked before drawing: analysis.panels)."""
    p = rs[0].run.info.policy
    return policy_text(p.limit, p.window_s, p.burst)


def _repeats(rs: Sequence[RunAnalysis], field: str) -> tuple[list[RunAnalysis], list[list[float]]]:
    """The first repeat of each run, and each run's values of ``field`` over its repeats."""
    groups: dict[str, list[RunAnalysis]] = {}
    for a in rs:
        groups.setdefault(group_name(a.run.name), []).append(a)
    return [g[0] for g in groups.values()], [[a.row[field] for a in g] for g in groups.values()]


def _bar_panel(ax: Axes, rs: Sequence[RunAnalysis], spread: Sequence[Sequence[float]], bounds: Sequence[float | None],
               line: tuple[float, str] | None) -> None:
    """Bars on a log axis (no bar cut off) at each run's median, whiskers min-max over its
    repeats, black ticks at each run's bound, ``line`` dashed red."""
    values = [float(np.median(v)) for v in spread]
    shown = [v for v in [*values, *(max(s) for s in spread), *(b for b in bounds if b is not None)] if v > 0]
    lo, hi = min([0.5, *shown]) / 1.5, max([line[0] if line else 1.0, *shown]) * 2.2
    x = np.arange(len(rs))
    for xi, a, v in zip(x, rs, values):
        ax.bar(xi, max(v, lo) - lo, bottom=lo, color=colour(a.run.info.algorithm), label=a.run.info.algorithm)
        ax.annotate(_times(v), (xi, max(v, lo)), ha="center", va="bottom", fontsize=7, rotation=90,
                    xytext=(0, 2), textcoords="offset points")
    for xi, v, s in zip(x, values, spread):
        if len(s) > 1:
            ax.errorbar(xi, max(v, lo), yerr=[[max(v, lo) - max(min(s), lo)], [max(s) - v]], color="black",
                        capsize=3, linewidth=0.8, label="min-max over repeats")
    marked = [(i, b) for i, b in enumerate(bounds) if b is not None]
    if marked:
        ax.scatter([i for i, _ in marked], [b for _, b in marked], marker="_", s=300, color="black",
                   zorder=3, label="theoretical bound")
    if line is not None:
        ax.axhline(line[0], color="red", linestyle="--", linewidth=1, label=line[1])
    ax.set_yscale("log")
    ax.set_ylim(lo, hi)
    _log_ticks(ax, lo, hi)
    ax.set_xticks(x, [_label(a) for a in rs], rotation=40, ha="right", fontsize=7)


def over_admission(runs: Sequence[RunAnalysis], fig_title: str) -> Figure:
    """Rate limiters only, per the key the policy names; log axis: unlimited baselines and bucket
    bursts reach tens of L, so no bar is clipped. The 2x line only in a panel with an algorithm
    whose bound it is (the fixed window's family)."""
    groups = _by_scenario(runs)
    fig, axes = _facets(len(groups), fig_title, cols=3, height=3.6)
    for ax, (scenario, every) in zip(axes, groups.items()):
        rs, spread = _repeats(every, "over_admission")
        values = [float(np.median(v)) for v in spread]
        bounds = [over_admission_bound(a.run.info.algorithm, a.run.info.policy, a.run.info.params) for a in rs]
        line = (FIXED_WINDOW_LINE, "2x (fixed window bound)") if FIXED_WINDOW_LINE in bounds else None
        _bar_panel(ax, rs, spread, bounds, line)
        ax.set_title(f"{scenario}: {_times(min(values))} to {_times(max(values))}\n{panel_policy(rs)}", fontsize=9)
        ax.set_ylabel("x L in one window W, worst key (log)", fontsize=8)
    _legend(fig, axes)
    return fig


def in_flight(runs: Sequence[RunAnalysis], fig_title: str) -> Figure:
    """Concurrency limiters only: peak admitted cost in flight as a multiple of their own bound
    (1x: the bound held), never on the rate limiters' axis."""
    groups = _by_scenario(runs)
    fig, axes = _facets(len(groups), fig_title, cols=3, height=3.6)
    for ax, (scenario, every) in zip(axes, groups.items()):
        rs, spread = _repeats(every, "in_flight_ratio")
        _bar_panel(ax, rs, spread, [None] * len(rs), (1.0, "1x (the limiter's bound)"))
        peaks = ", ".join(f"{a.row['in_flight_peak']:,.0f}/{a.row['in_flight_bound']:,.0f}" for a in rs)
        ax.set_title(f"{scenario}: peak in flight {peaks}\n{panel_policy(rs)}", fontsize=9)
        ax.set_ylabel("peak in flight / bound (log)", fontsize=8)
    _legend(fig, axes)
    return fig


def envelope(runs: Sequence[RunAnalysis], fig_title: str) -> Figure:
    """One panel per run, the others in grey behind it; shared log-log axes."""
    rs = _order(runs)
    fig, axes = _facets(len(rs), fig_title, cols=5, height=2.3, share=True)
    for ax, a in zip(axes, rs):
        for other in rs:
            if other is not a:
                ax.plot(other.envelope["interval_s"], other.envelope["max_admitted_cost"], color=CONTEXT, linewidth=0.8)
        env, info = a.envelope, a.run.info
        ax.plot(env["interval_s"], env["max_admitted_cost"], color=colour(info.algorithm), linewidth=1.8)
        theory = envelope_bound(info.algorithm, info.policy, info.params, env["interval_s"].to_numpy())
        if theory is not None:
            ax.plot(env["interval_s"], theory, color="black", linestyle=":", linewidth=1)
        ax.axvline(info.policy.window_s, color="grey", linestyle="--", linewidth=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        at_w = a.row["over_admission"] * info.policy.limit
        _panel_title(ax, a, f"{at_w:,.0f} in W")
        ax.tick_params(labelsize=7)
        _plain_log_y(ax)
    window = rs[0].run.info.policy.window_s
    fig.supxlabel(f"interval length d (s, log); dashed: W = {window:g} s", fontsize=9)
    fig.supylabel("most admitted in any d (cost, log)", fontsize=9)
    return fig


def boundary(runs: Sequence[RunAnalysis], fig_title: str) -> Figure:
    """One small panel per run: the fixed window's 2L inside two bins is the picture."""
    ordered = _order(runs)
    fig, axes = _facets(len(ordered), fig_title, cols=5, height=2.1, share=True)
    top = max(int(a.boundary["admitted"].max()) for a in ordered) * 1.15 or 1.0
    width_ms = 100.0
    for ax, a in zip(axes, ordered):
        b = a.boundary
        width_ms = float(b["offset_s"].iloc[1] - b["offset_s"].iloc[0]) * 1000 if len(b) > 1 else 100.0
        ax.bar(b["offset_s"] * 1000, b["admitted"], width=width_ms, align="edge", color=colour(a.run.info.algorithm))
        ax.axvline(0, color="black", linestyle="--", linewidth=1)
        _panel_title(ax, a, f"{int(b['admitted'].sum()):,} admitted")
        ax.set_ylim(0, top)
        ax.tick_params(labelsize=7)
    fig.supxlabel("ms from the window boundary (dashed)", fontsize=9)
    fig.supylabel(f"admitted per {width_ms:.0f} ms", fontsize=9)
    return fig


def _shade(ax: Axes, runs: Sequence[RunAnalysis]) -> None:
    spans = {(round(a.degraded[0], 3), round(a.degraded[1], 3)) for a in runs if a.degraded is not None}  # one shade per phase
    for i, (start, end) in enumerate(sorted(spans)):
        ax.axvspan(start, end, color="orange", alpha=0.12, label="degraded phase" if i == 0 else None)


def _bin_label(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:g} s"


def latency_over_time(runs: Sequence[RunAnalysis], fig_title: str) -> Figure:
    """One panel per run, shared log axis; each bin's percentile drawn flat across the bin, so
    bins and the shaded phase line up."""
    rs = _order(runs)
    fig, axes = _facets(len(rs), fig_title, cols=5, height=2.3, share=True)
    for ax, a in zip(axes, rs):
        _shade(ax, [a])
        s, c, width = a.latency_series, colour(a.run.info.algorithm), a.latency_bin_s
        edges = np.append(s["t"].to_numpy(dtype=np.float64), float(s["t"].iloc[-1]) + width)
        edges[0] = max(edges[0], 0.0)  # bins are laid from the phase start: the first may begin before the run
        for name, style in (("p99", {"linewidth": 1.6, "label": "P99"}), ("p50", {"linewidth": 0.9, "linestyle": ":", "label": "P50"})):
            values = s[name].to_numpy(dtype=np.float64)
            ax.step(edges, np.append(values, values[-1]), where="post", color=c, **style)
        ax.set_yscale("log")
        _plain_log_y(ax)
        p99 = a.row.get("latency_p99_intended_ms")
        _panel_title(ax, a, "P99 n/a" if p99 is None else f"P99 {p99:,.0f} ms")
        ax.tick_params(labelsize=7)
    bins = sorted({a.latency_bin_s for a in runs})
    fig.supxlabel(f"time since the run started (s); bins of {', '.join(_bin_label(b) for b in bins)}; "
                  "shaded: degraded phase", fontsize=9)
    fig.supylabel("latency from intended send (ms, log)\nsolid P99, dotted P50", fontsize=9)
    return fig


def latency_cdf(runs: Sequence[RunAnalysis], fig_title: str) -> Figure:
    """One panel per run, the others in grey behind it."""
    rs = _order(runs)
    fig, axes = _facets(len(rs), fig_title, cols=5, height=2.1, share=True)
    for ax, a in zip(axes, rs):
        for other in rs:
            if other is not a:
                ax.plot(*other.latency_cdf, color=CONTEXT, linewidth=0.8, drawstyle="steps-post")
        ax.plot(*a.latency_cdf, color=colour(a.run.info.algorithm), linewidth=1.6, drawstyle="steps-post")
        ax.set_xscale("log")
        p50 = a.row.get("latency_p50_intended_ms")
        _panel_title(ax, a, "P50 n/a" if p50 is None else f"P50 {p50:,.0f} ms")
        ax.tick_params(labelsize=7)
    fig.supxlabel("latency from intended send (ms, log)", fontsize=9)
    fig.supylabel("share of admitted requests", fontsize=9)
    return fig


COMPARISON = (
    ("latency_p99_intended_ms", "P99 latency (ms, log)", 1.0, True),
    ("rejected_rate", "rejected (% of requests)", 100.0, False),
    ("cpu_target_us_per_req", "marginal target CPU (µs / request, 95% interval)", 1.0, False),
)
INTERVALS = {"cpu_target_us_per_req": ("cpu_target_us_per_req_low", "cpu_target_us_per_req_high")}
"""Measures drawn with their own interval as a whisker."""


BELOW_RESOLUTION = "< res."
"""How a chart marks a run whose marginal CPU its samples cannot resolve: a mark, not a blank."""


def _below_resolution(ax: Axes, x: float, color: str) -> None:
    """``< res.`` upright at the foot of the run's place (x in data, y in the panel's height)."""
    ax.text(x, 0.03, BELOW_RESOLUTION, transform=ax.get_xaxis_transform(), rotation=90, ha="center", va="bottom",
            fontsize=7, color=color)


def comparison(runs: Sequence[RunAnalysis], fig_title: str) -> Figure:
    """One row per measure, full width; scenarios side by side, one bar per run in its algorithm's colour."""
    groups = _by_scenario(runs)
    fig = new_figure(figsize=(WIDTH_IN, 2.4 * len(COMPARISON) + 0.9), layout="constrained")
    axes = list(fig.subplots(len(COMPARISON), 1, sharex=True))
    fig.suptitle(fig_title, fontsize=12, fontweight="bold")
    width = 0.8 / max(len(rs) for rs in groups.values())
    for ax, (field, label, scale, log) in zip(axes, COMPARISON):
        missing = unresolved = 0
        for g, rs in enumerate(groups.values()):
            for k, a in enumerate(rs):
                value, x = a.row.get(field), g - 0.4 + width * (k + 0.5)
                if value is None and field in INTERVALS and a.row.get("cpu_target_ms_per_1k") is not None:
                    unresolved += 1
                    _below_resolution(ax, x, colour(a.run.info.algorithm))
                    continue
                missing += value is None
                if value is not None and (value > 0 or not log):
                    ax.bar(x, value * scale, width, color=colour(a.run.info.algorithm), label=a.run.info.algorithm)
                    if field in INTERVALS:
                        low, high = (a.row[f] * scale for f in INTERVALS[field])
                        ax.plot([x, x], [low, high], color="black", linewidth=1.0)
        if log:
            ax.set_yscale("log")
        ax.set_ylabel(label, fontsize=8)
        ax.tick_params(labelsize=8)
        notes = [f"{missing} runs n/a: {'no cpu.csv' if field in INTERVALS else 'no client log / cpu.csv'}"] * bool(missing)
        notes += [f"{unresolved} runs {BELOW_RESOLUTION} below the sampler's resolution"] * bool(unresolved)
        ax.set_title(label.split(" (")[0] + (f" ({'; '.join(notes)})" if notes else ""), fontsize=9)
    axes[-1].set_xticks(np.arange(len(groups)), [f"{s}\n{panel_policy(rs)}" for s, rs in groups.items()], fontsize=8)
    _legend(fig, axes)
    return fig


def rejections(runs: Sequence[RunAnalysis], fig_title: str) -> Figure:
    groups = _by_scenario(runs)
    fig, axes = _facets(len(groups), fig_title, cols=3, height=3.2)
    for ax, (scenario, rs) in zip(axes, groups.items()):
        x = np.arange(len(rs))
        cols = [colour(a.run.info.algorithm) for a in rs]
        # a class a run did not have gets no bar (NaN is not drawn): an absent class is not 0% rejected
        legit = [np.nan if a.row["rejected_legit_rate"] is None else 100 * a.row["rejected_legit_rate"] for a in rs]
        abusive = [np.nan if a.row["rejected_abusive_rate"] is None else 100 * a.row["rejected_abusive_rate"] for a in rs]
        ax.bar(x - 0.2, legit, 0.4, color=cols, label="legit")
        ax.bar(x + 0.2, abusive, 0.4, color=cols, hatch="///", alpha=0.55, edgecolor="black", label="abusive")
        ax.set_xticks(x, [_label(a) for a in rs], rotation=40, ha="right", fontsize=7)
        ax.set_ylim(0, 105)
        ax.set_ylabel("rejected (% of the class)", fontsize=8)
        measured = [v for a, v in zip(rs, legit) if a.row["legit_requests"]]
        said = f"legit {min(measured):.0f}-{max(measured):.0f}%" if measured else "no legitimate clients"
        ax.set_title(f"{scenario}: {said}\n{panel_policy(rs)}", fontsize=9)
    _legend(fig, axes[:1])
    return fig


def retry_storm(runs: Sequence[RunAnalysis], fig_title: str) -> Figure:
    """One panel per backoff policy (and trigger), shared axes: the herd and how it spreads."""
    rs = sorted(runs, key=lambda a: (backoff(a.row), a.run.name))
    fig, axes = _facets(len(rs), fig_title, cols=3, height=2.4, share=True)
    for ax, a in zip(axes, rs):
        t = a.calls["t"].to_numpy(dtype=np.float64)
        ax.stairs(a.calls["calls_per_s"].to_numpy(dtype=np.float64), np.append(t, t[-1] + CALLS_BIN_S) if len(t) else [0.0],
                  color=colour(a.run.info.algorithm), fill=True, alpha=0.8)
        row = a.row
        done = "" if row.get("completed_requests") is None else \
            f", {row['completed_requests']:,}/{row['unique_requests']:,} done"
        calls = "" if row.get("calls") is None else f": {row['calls']:,} calls"
        ax.set_title(f"{backoff(row)} ({_label(a)}){calls}{done}", fontsize=9)
        ax.tick_params(labelsize=7)
    fig.supxlabel(f"time since the run started (s); bins of {_bin_label(CALLS_BIN_S)}", fontsize=9)
    fig.supylabel("calls reaching the target per second", fontsize=9)
    return fig


def ramp_p99(runs: Sequence[RunAnalysis], fig_title: str) -> Figure:
    """One line per run on one axis, P99 (log) against the offered rate of each bin: where each
    limiter's line crosses the bound is the answer; bins not replayed cleanly, or with a failure, are crosses."""
    rs = _order(runs)
    fig, (ax,) = _facets(1, fig_title, cols=1, height=4.2)
    bounds = sorted({a.row["ramp_p99_bound_ms"] for a in rs})
    for a in rs:
        b, c = a.ramp.sort_values("offered_rps", kind="stable"), colour(a.run.info.algorithm)
        rate = a.row["ramp_sustained_rps"]
        ax.plot(b["offered_rps"], b["p99_ms"], color=c, linewidth=1.6, marker=".", markersize=4,
                label=f"{_label(a)}: {rate:,.0f}/s")
        bad = b[ramp.unclean(b)]
        ax.scatter(bad["offered_rps"], bad["p99_ms"], marker="x", color=c, s=30, zorder=3)
        if rate > 0:
            ax.axvline(rate, color=c, linestyle=":", linewidth=0.9)
    for i, bound in enumerate(bounds):
        ax.axhline(bound, color="red", linestyle="--", linewidth=1, label=f"P99 bound {bound:g} ms" if i == 0 else None)
    ax.set_yscale("log")
    _plain_log_y(ax)
    ax.set_xlabel(f"offered rate (requests/s, one point per {_bin_label(ramp.settings(rs[0].run.info)[1])} bin "
                  "of the ramp); dotted: the rate each sustained; x: 1% or more sent late, or a failure", fontsize=9)
    ax.set_ylabel("P99 from intended send (ms, log)", fontsize=9)
    ax.tick_params(labelsize=8)
    _legend(fig, [ax], title="highest offered rate sustained")
    return fig


def adaptive_limit(runs: Sequence[RunAnalysis], fig_title: str) -> Figure:
    """One row per downstream break, one column per rule: each panel the limit over time against
    the downstream's slots (its concurrency capacity), the break shaded."""
    kinds = list(dict.fromkeys(a.row["break_kind"] for a in runs))
    rules = list(dict.fromkeys(a.row["adaptive_rule"] for a in runs))
    fig = new_figure(figsize=(WIDTH_IN, 1.5 * len(kinds) + 0.9), layout="constrained")
    grid = np.atleast_2d(fig.subplots(len(kinds), len(rules), squeeze=False, sharex=True, sharey=True))
    fig.suptitle(fig_title, fontsize=12, fontweight="bold")
    cells = {(a.row["break_kind"], a.row["adaptive_rule"]): a for a in runs}
    for i, kind in enumerate(kinds):
        for j, rule in enumerate(rules):
            ax, a = grid[i, j], cells.get((kind, rule))
            ax.tick_params(labelsize=7)
            if i == 0:
                ax.set_title(rule, fontsize=9)
            if j == 0:
                ax.set_ylabel(kind, fontsize=9)
            if a is None:
                continue
            _shade_break(ax, a)
            ax.step(a.limit["t"], a.limit["limit"], where="post", color=colour("adaptive"), linewidth=1.2)
            slots = a.run.info.scenario_params.get("slots")
            if slots is not None:
                ax.axhline(slots, color="black", linestyle="--", linewidth=0.8)
    fig.supxlabel("time since the run started (s); solid: the limit; dashed: the downstream's slots; shaded: the break",
                  fontsize=9)
    fig.supylabel("concurrency limit", fontsize=9)
    return fig


def _shade_break(ax: Axes, a: RunAnalysis) -> None:
    window = break_window(a.run.info)
    if window is not None:
        ax.axvspan(window[0] - a.origin, window[1] - a.origin, color="orange", alpha=0.15)


@dataclass(frozen=True)
class Spec:
    name: str
    title: str
    caption: str
    select: Callable[[RunAnalysis], bool]
    draw: Callable[[Sequence[RunAnalysis], str], Figure]
    per_scenario: bool = False  # one chart per scenario (named ``<name>-<scenario>``)


def _live_latency(a: RunAnalysis) -> bool:
    return a.run.info.scenario.split("-", 1)[0] == LATENCY_SCENARIO and a.latency_cdf is not None


SPECS = (
    Spec("over_admission", "Over-admission per rate limiter",
         "Worst key's most admitted cost in any window W, as a multiple of L, per the key the policy names, one panel "
         "per scenario (its policy under its name); log scale (powers of two), so no bar is cut off; black ticks: "
         "theoretical bound; red dashed: the fixed window's 2x, where a fixed-window-family algorithm ran.",
         lambda a: a.row["over_admission"] is not None, over_admission),
    Spec("in_flight", "Peak in flight per concurrency limiter",
         "Most admitted cost in flight at one instant, as a multiple of the limiter's own bound (concurrency: "
         "max_in_flight; adaptive: its ceiling), one panel per scenario; red dashed: the bound. Not comparable "
         "with over-admission: these limiters bound work in progress under one global key, not a rate per key.",
         lambda a: a.row.get("in_flight_ratio") is not None, in_flight),
    Spec("envelope", "Admitted-traffic envelope",
         "Most admitted cost in any interval of length d, 10 ms to 2W, one panel per run (grey: the other runs); "
         "log-log; dotted: theoretical bound. How much gets through, and how fast.",
         lambda a: len(a.envelope) > 0 and a.row["over_admission"] is not None, envelope, per_scenario=True),
    Spec("boundary", "Admitted requests around a window boundary",
         "Admitted requests per bin in the second either side of the window boundary the burst hit, one panel per run; "
         "the title counts what was admitted in the panel.",
         lambda a: a.boundary is not None, boundary, per_scenario=True),
    Spec("latency_over_time", "Latency over time",
         "P99 (solid) and P50 (dotted) from the intended send time per time bin (20-40 bins per run, at least "
         "100 ms, laid from the start of the degraded phase), one panel per run, log scale; shaded: degraded phase.",
         _live_latency, latency_over_time, per_scenario=True),
    Spec("latency_cdf", "Latency CDF",
         "Distribution of admitted requests' latency from the intended send time, one panel per run (grey: the other "
         "runs); log x.", _live_latency, latency_cdf, per_scenario=True),
    Spec("comparison", "P99 latency, rejections and target CPU per run",
         "One row per measure, one bar per run, grouped by scenario: P99 latency from the intended send time (log "
         "scale), share of requests rejected, the target's marginal CPU per request (the slope of CPU against requests "
         "over the CPU sampler's bins; whisker: its 95% interval; not drawn where the run cannot resolve it).",
         lambda a: True, comparison),
    Spec("rejections", "Legitimate vs abusive rejections",
         "Share of each client class's requests rejected (solid: legit, hatched: abusive), one panel per scenario.",
         lambda a: bool(a.row["legit_requests"] or a.row["abusive_requests"]), rejections),
    Spec("retry_storm", "Retry storm: calls over time per backoff policy",
         "Calls reaching the target per second, one panel per backoff policy (and trigger: a burst, or a 503 outage).",
         lambda a: a.calls is not None, retry_storm),
    Spec("ramp_p99", "P99 against the offered rate",
         "P99 of admitted requests from the intended send time in each bin of the ramp, against the rate offered in "
         "that bin, one line per algorithm, log scale; red dashed: the P99 bound; dotted: the highest offered rate each "
         "run sustained (in every bin up to it: P99 under the bound, fewer than 1% of the sends late, no failure); "
         "x: a bin with 1% or more of its sends late, or a failed request.", lambda a: a.ramp is not None, ramp_p99, per_scenario=True),
    Spec("adaptive_limit", "Adaptive limit over time, per rule and downstream break",
         "The adaptive limiter's concurrency limit (its decision log's adaptive_limit, the last value per 50 ms), one "
         "row per way the downstream breaks, one column per rule; dashed: the downstream's slots; shaded: the break "
         "(to the run's end for a step, which never recovers).", lambda a: a.limit is not None, adaptive_limit),
)


def _draw(name: str, chosen: Sequence[RunAnalysis], chart: Chart, root: Path) -> None:
    """One chart, in a worker (specs hold lambdas, so the worker looks its spec up by name)."""
    spec = next(s for s in SPECS if s.name == name)
    _save(spec.draw(chosen, chart.title), chart, root)


SPREAD_SPECS = ("over_admission", "in_flight")
"""Charts that draw every repeat (median and whiskers); the others draw each run's first repeat."""


def _charts(spec: Spec, chosen: Sequence[RunAnalysis]) -> list[tuple[Chart, list[RunAnalysis]]]:
    if spec.name not in SPREAD_SPECS:
        chosen = [a for a in chosen if split_repeat(a.run.name)[1] in (None, 1)]
    if not chosen:
        return []
    if not spec.per_scenario:
        return [(Chart(spec.name, spec.title, spec.caption, spec.name), list(chosen))]
    return [(Chart(f"{spec.name}-{scenario}", f"{spec.title}: {scenario}, {panel_policy(rs)}", spec.caption, spec.name,
                   scenario), rs) for scenario, rs in _by_scenario(chosen).items()]


def check_panels(runs: Sequence[RunAnalysis]) -> None:
    """A panel draws one scenario under one policy: runs of one scenario under different policies
    are refused (ResultsError), naming two of them."""
    for scenario, rs in _by_scenario(runs).items():
        seen = {panel_policy([a]): a.run.name for a in rs}
        if len(seen) > 1:
            (p1, r1), (p2, r2) = list(seen.items())[:2]
            raise ResultsError(f"scenario {scenario} holds runs of different policies ({r1}: {p1}; {r2}: {p2}): "
                               "one panel draws one policy; give each policy its own scenario label")


def draw_all(runs: Sequence[RunAnalysis], root: Path, only: Collection[str] | None = None,
             pool: Executor | None = None, on_chart: Callable[[int, int, str], None] | None = None) -> list[Chart]:
    """Draw every chart (or those of the specs named in ``only``) that has data, in ``pool`` when
    given; returns the charts drawn, calling ``on_chart(i, n, name)`` as each is done. Files of those
    specs' charts that have no data any more are removed."""
    charts, jobs = [], []
    for spec in (s for s in SPECS if only is None or s.name in only):
        made = _charts(spec, [a for a in runs if spec.select(a)])
        names = {c.name for c, _ in made}
        for path in [*(root / CHARTS_DIR).glob(f"{spec.name}.*"), *(root / CHARTS_DIR).glob(f"{spec.name}-*.*")]:
            if path.stem not in names:
                path.unlink(missing_ok=True)  # a chart from an earlier report must not outlive its data
        jobs += [(spec.name, chosen, chart) for chart, chosen in made]
        charts += [chart for chart, _ in made]
    if pool is None:
        for i, (name, chosen, chart) in enumerate(jobs, 1):
            _draw(name, chosen, chart, root)
            if on_chart is not None:
                on_chart(i, len(jobs), chart.name)
        return charts
    pending = {pool.submit(_draw, name, chosen, chart, root): chart.name for name, chosen, chart in jobs}
    for i, future in enumerate(as_completed(pending), 1):
        future.result()
        if on_chart is not None:
            on_chart(i, len(pending), pending[future])
    return charts
