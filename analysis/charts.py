"""The comparison charts (matplotlib, Agg, no pyplot state): PNG and SVG under ``charts/``.

One colour per algorithm in every chart (PALETTE, keyed by docs/architecture.md's algorithm names). A chart
whose data is absent is skipped with the reason, which the report prints.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from contract.atomic import atomic_write
from contract.schema import ALGORITHM_NAMES, CHARTS_DIR

from .analyze import BOUNDARY_SCENARIO, LATENCY_SCENARIO, RETRY_STORM_PREFIX, RunAnalysis
from .theory import envelope_bound, over_admission_bound

_TAB10 = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
PALETTE = dict(zip(ALGORITHM_NAMES, _TAB10))
OTHER_COLOUR = "#444444"
FORMATS = ("png", "svg")
DPI = 110


def colour(algorithm: str) -> str:
    return PALETTE.get(algorithm, OTHER_COLOUR)


@dataclass(frozen=True)
class Chart:
    name: str
    title: str
    caption: str
    skipped: str | None = None  # why the chart was not drawn

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


def _facets(n: int, title: str, width: float = 5.2, height: float = 3.6, cols: int = 3) -> tuple[Figure, list[Axes]]:
    cols = min(cols, n)
    rows = -(-n // cols)
    fig = Figure(figsize=(width * cols, height * rows + 0.6), layout="constrained")
    axes = list(np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel())
    for ax in axes[n:]:
        ax.set_visible(False)
    fig.suptitle(title, fontsize=13, fontweight="bold")
    return fig, axes[:n]


def _label(a: RunAnalysis) -> str:
    i = a.run.info
    return i.algorithm if i.store == "memory" else f"{i.algorithm} ({i.store})"


def _legend(fig: Figure, axes: Sequence[Axes], title: str | None = None) -> None:
    """One legend for the figure: the same algorithm has the same colour in every panel."""
    unique: dict[str, object] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            unique.setdefault(label, handle)
    fig.legend(list(unique.values()), list(unique), loc="outside right upper", fontsize=8, title=title)


def _save(fig: Figure, chart: Chart, root: Path) -> None:
    """Lay out once, then write both formats (constrained layout would run again per file)."""
    fig.draw_without_rendering()
    fig.set_layout_engine("none")
    for fmt, path in chart.files(root).items():
        atomic_write(path, lambda tmp, fmt=fmt: fig.savefig(tmp, format=fmt, dpi=DPI))


OVER_ADMISSION_TOP = 4.0
"""The y axis stops here (unlimited baselines reach hundreds); taller bars are labelled."""


def over_admission(runs: Sequence[RunAnalysis], fig_title: str) -> Figure:
    groups = _by_scenario(runs)
    fig, axes = _facets(len(groups), fig_title)
    for ax, (scenario, rs) in zip(axes, groups.items()):
        values = [a.row["over_admission"] for a in rs]
        bounds = [over_admission_bound(a.run.info.algorithm, a.run.info.policy, a.run.info.params) for a in rs]
        top = min(OVER_ADMISSION_TOP, 1.15 * max([2.0, *values, *(b for b in bounds if b is not None)]))
        x = np.arange(len(rs))
        for xi, a, v in zip(x, rs, values):
            ax.bar(xi, min(v, top), color=colour(a.run.info.algorithm), label=a.run.info.algorithm)
            ax.annotate((f"{v:.2f}x" if v < 10 else f"{v:.0f}x") + (" ↑" if v > top else ""), (xi, min(v, top)), ha="center", va="bottom",
                        fontsize=7, xytext=(0, 2), textcoords="offset points", annotation_clip=False)
        marked = [(i, b) for i, b in enumerate(bounds) if b is not None]
        if marked:
            ax.scatter([i for i, _ in marked], [min(b, top) for _, b in marked], marker="_", s=500, color="black",
                       zorder=3, label="theoretical bound")
        ax.axhline(2.0, color="red", linestyle="--", linewidth=1, label="2x (fixed window bound)")
        ax.set_xticks(x, [_label(a) for a in rs], rotation=35, ha="right", fontsize=8)
        ax.set_ylim(0, top * 1.08)
        ax.set_title(scenario)
        ax.set_ylabel("over-admission (x L in a window W)")
    _legend(fig, axes)
    return fig


def envelope(runs: Sequence[RunAnalysis], fig_title: str) -> Figure:
    groups = _by_scenario(runs)
    fig, axes = _facets(len(groups), fig_title)
    for ax, (scenario, rs) in zip(axes, groups.items()):
        for a in rs:
            env, info = a.envelope, a.run.info
            ax.plot(env["interval_s"], env["max_admitted_cost"], color=colour(info.algorithm), label=_label(a), linewidth=1.4)
            theory = envelope_bound(info.algorithm, info.policy, info.params, env["interval_s"].to_numpy())
            if theory is not None:
                ax.plot(env["interval_s"], theory, color=colour(info.algorithm), linestyle=":", linewidth=1)
        window = rs[0].run.info.policy.window_s
        ax.axvline(window, color="grey", linestyle="--", linewidth=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{scenario} (dotted: theoretical; dashed: W = {window:g} s)", fontsize=9)
        ax.set_xlabel("interval length d (s)")
        ax.set_ylabel("max admitted cost in any interval d (cost units)", fontsize=8)
    _legend(fig, axes)
    return fig


def boundary(runs: Sequence[RunAnalysis], fig_title: str) -> Figure:
    """One small panel per run: the fixed window's 2L inside two bins is the picture."""
    ordered = _order(runs)
    fig, axes = _facets(len(ordered), fig_title, width=4.2, height=2.8, cols=4)
    top = max(int(a.boundary["admitted"].max()) for a in ordered) * 1.15 or 1.0
    for ax, a in zip(axes, ordered):
        b = a.boundary
        width_ms = float(b["offset_s"].iloc[1] - b["offset_s"].iloc[0]) * 1000 if len(b) > 1 else 100.0
        ax.bar(b["offset_s"] * 1000, b["admitted"], width=width_ms, align="edge", color=colour(a.run.info.algorithm))
        ax.axvline(0, color="black", linestyle="--", linewidth=1)
        pair = int((b["admitted"] + b["admitted"].shift(-1, fill_value=0)).max())
        ax.set_title(f"{_label(a)}: {pair} in {2 * width_ms:.0f} ms", fontsize=9)
        ax.set_ylim(0, top)
        ax.set_xlabel("ms from the window boundary (dashed)", fontsize=8)
        ax.set_ylabel(f"admitted per {width_ms:.0f} ms", fontsize=8)
    return fig


def _shade(ax: Axes, runs: Sequence[RunAnalysis]) -> None:
    spans = {(round(a.degraded[0], 3), round(a.degraded[1], 3)) for a in runs if a.degraded is not None}  # one shade per phase
    for i, (start, end) in enumerate(sorted(spans)):
        ax.axvspan(start, end, color="orange", alpha=0.12, label="degraded phase" if i == 0 else None)


def _bin_label(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:g} s"


def latency_over_time(runs: Sequence[RunAnalysis], fig_title: str) -> Figure:
    """Each bin's percentile drawn flat across the bin, so bins and the shaded phase line up."""
    fig = Figure(figsize=(10, 5), layout="constrained")
    ax = fig.subplots()
    _shade(ax, runs)
    for a in _order(runs):
        s, c, width = a.latency_series, colour(a.run.info.algorithm), a.latency_bin_s
        edges = np.append(s["t"].to_numpy(dtype=np.float64), float(s["t"].iloc[-1]) + width)
        edges[0] = max(edges[0], 0.0)  # bins are laid from the phase start: the first may begin before the run
        for name, style in (("p99", {"linewidth": 1.4, "label": f"{_label(a)} P99"}), ("p50", {"linewidth": 0.9, "linestyle": ":"})):
            values = s[name].to_numpy(dtype=np.float64)
            ax.step(edges, np.append(values, values[-1]), where="post", color=c, **style)
    bins = sorted({a.latency_bin_s for a in runs})
    ax.set_yscale("log")
    ax.set_xlabel(f"time since the run started (s); bins of {', '.join(_bin_label(b) for b in bins)}")
    ax.set_ylabel(f"latency from intended send (ms) per {_bin_label(bins[0]) if len(bins) == 1 else 'bin'}\n"
                  "solid P99, dotted P50", fontsize=9)
    ax.set_title(fig_title, fontweight="bold")
    ax.legend(fontsize=7, ncol=2)
    return fig


def latency_cdf(runs: Sequence[RunAnalysis], fig_title: str) -> Figure:
    fig = Figure(figsize=(9, 5), layout="constrained")
    ax = fig.subplots()
    for a in _order(runs):
        x, y = a.latency_cdf
        ax.plot(x, y, color=colour(a.run.info.algorithm), label=_label(a), drawstyle="steps-post")
    ax.set_xscale("log")
    ax.set_xlabel("latency from intended send (ms)")
    ax.set_ylabel("share of admitted requests (CDF)")
    ax.set_title(fig_title, fontweight="bold")
    ax.legend(fontsize=7)
    return fig


COMPARISON = (
    ("latency_p99_intended_ms", "P99 latency (ms)", 1.0, "{:.0f}"),
    ("rejected_rate", "rejected (% of requests)", 100.0, "{:.1f}"),
    ("cpu_target_ms_per_1k", "target CPU (ms / 1,000 requests)", 1.0, "{:.0f}"),
)


def comparison(runs: Sequence[RunAnalysis], fig_title: str) -> Figure:
    """One panel per measure; scenarios side by side, one bar per run in its algorithm's colour."""
    groups = _by_scenario(runs)
    fig, axes = _facets(len(COMPARISON), fig_title, width=max(4.5, 0.3 * len(runs) + 1.5), height=4.2, cols=len(COMPARISON))
    width = 0.8 / max(len(rs) for rs in groups.values())
    for ax, (field, label, scale, _) in zip(axes, COMPARISON):
        missing = 0
        for g, rs in enumerate(groups.values()):
            for k, a in enumerate(rs):
                value = a.row.get(field)
                missing += value is None
                x = g - 0.4 + width * (k + 0.5)
                ax.bar(x, 0.0 if value is None else value * scale, width, color=colour(a.run.info.algorithm),
                       label=a.run.info.algorithm)
        ax.set_xticks(np.arange(len(groups)), list(groups), fontsize=8, rotation=20, ha="right")
        ax.set_ylabel(label, fontsize=8)
        note = f" ({missing} runs n/a: no client log / cpu.csv)" if missing else ""
        ax.set_title(label.split(" (")[0] + note, fontsize=9)
    handles, labels = axes[0].get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    fig.legend(unique.values(), unique.keys(), loc="outside right upper", fontsize=7)
    return fig


def rejections(runs: Sequence[RunAnalysis], fig_title: str) -> Figure:
    groups = _by_scenario(runs)
    fig, axes = _facets(len(groups), fig_title)
    for ax, (scenario, rs) in zip(axes, groups.items()):
        x = np.arange(len(rs))
        cols = [colour(a.run.info.algorithm) for a in rs]
        legit = [100 * (a.row["rejected_legit_rate"] or 0.0) for a in rs]
        abusive = [100 * (a.row["rejected_abusive_rate"] or 0.0) for a in rs]
        ax.bar(x - 0.2, legit, 0.4, color=cols, label="legit")
        ax.bar(x + 0.2, abusive, 0.4, color=cols, hatch="///", alpha=0.55, edgecolor="black", label="abusive")
        ax.set_xticks(x, [_label(a) for a in rs], rotation=35, ha="right", fontsize=8)
        ax.set_ylim(0, 105)
        ax.set_ylabel("rejected (% of the class's requests)")
        ax.set_title(scenario)
    _legend(fig, axes[:1])
    return fig


def retry_storm(runs: Sequence[RunAnalysis], fig_title: str) -> Figure:
    fig = Figure(figsize=(10, 5), layout="constrained")
    ax = fig.subplots()
    styles = ("-", "--", ":", "-.")

    def policy(a: RunAnalysis) -> str:
        """The backoff policy, and the trigger when it is not the default burst."""
        params = a.run.info.scenario_params
        backoff = str(params.get("backoff", a.run.info.scenario))
        return f"{backoff}, {params['trigger']}" if params.get("trigger", "burst") != "burst" else backoff

    backoffs = sorted({policy(a) for a in runs})
    for a in _order(runs):
        backoff = policy(a)
        ax.plot(a.calls["t"], a.calls["calls_per_s"], color=colour(a.run.info.algorithm),
                linestyle=styles[backoffs.index(backoff) % len(styles)], label=f"{backoff} ({_label(a)})")
    ax.set_xlabel("time since the run started (s)")
    ax.set_ylabel("calls reaching the target (per second)")
    ax.set_title(fig_title, fontweight="bold")
    ax.legend(fontsize=7, title="backoff policy[, trigger] (algorithm)", title_fontsize=7)
    return fig


@dataclass(frozen=True)
class Spec:
    name: str
    title: str
    caption: str
    select: Callable[[RunAnalysis], bool]
    draw: Callable[[Sequence[RunAnalysis], str], Figure]
    absent: str


def _live_latency(a: RunAnalysis) -> bool:
    return a.run.info.scenario == LATENCY_SCENARIO and a.latency_cdf is not None


SPECS = (
    Spec("over_admission", "Over-admission per algorithm",
         "Worst key's max admitted cost in any window W, divided by L (log scale); black ticks: theoretical bound.",
         lambda a: True, over_admission, "no runs"),
    Spec("envelope", "Admitted-traffic envelope",
         "Max admitted cost in any interval of length d, 10 ms to 2W: how much gets through, and how fast.",
         lambda a: len(a.envelope) > 0, envelope, "no admitted requests"),
    Spec("boundary", "Admitted requests around a window boundary",
         "Admitted requests per 100 ms in the second either side of the window boundary the burst hit.",
         lambda a: a.boundary is not None, boundary, f"no {BOUNDARY_SCENARIO} runs"),
    Spec("latency_over_time", "Latency over time, unhealthy downstream",
         "P99 (solid) and P50 (dotted) from the intended send time per time bin (20-40 bins per run, at least "
         "100 ms, laid from the start of the degraded phase); shaded: degraded phase.",
         _live_latency, latency_over_time, f"no {LATENCY_SCENARIO} runs with a client log (live runs only)"),
    Spec("latency_cdf", "Latency CDF, unhealthy downstream",
         "Distribution of admitted requests' latency from the intended send time.",
         _live_latency, latency_cdf, f"no {LATENCY_SCENARIO} runs with a client log (live runs only)"),
    Spec("comparison", "P99 latency, rejections and CPU per algorithm",
         "The seed article's comparison: P99 from intended send, share rejected, target CPU per 1,000 requests.",
         lambda a: True, comparison, "no runs"),
    Spec("rejections", "Legitimate vs abusive rejections",
         "Share of each client class's requests rejected (solid: legit, hatched: abusive).",
         lambda a: bool(a.row["legit_requests"] or a.row["abusive_requests"]), rejections, "no classified clients"),
    Spec("retry_storm", "Retry storm: calls over time per backoff policy",
         "Calls reaching the target per second; one line style per backoff policy (and trigger: a burst, or a 503 outage).",
         lambda a: a.calls is not None, retry_storm, f"no {RETRY_STORM_PREFIX}* runs"),
)


def _draw(name: str, chosen: Sequence[RunAnalysis], root: Path) -> None:
    """One chart, in a worker (specs hold lambdas, so the worker looks its spec up by name)."""
    spec = next(s for s in SPECS if s.name == name)
    _save(spec.draw(chosen, spec.title), Chart(spec.name, spec.title, spec.caption), root)


def draw_all(runs: Sequence[RunAnalysis], root: Path, only: Collection[str] | None = None,
             pool: Executor | None = None) -> list[Chart]:
    """Draw every chart (or those named in ``only``) that has data, in ``pool`` when given;
    returns them all, skipped ones with the reason."""
    charts, pending = [], []
    for spec in (s for s in SPECS if only is None or s.name in only):
        chosen = [a for a in runs if spec.select(a)]
        chart = Chart(spec.name, spec.title, spec.caption, None if chosen else spec.absent)
        if not chosen:
            for path in chart.files(root).values():
                path.unlink(missing_ok=True)  # a chart from an earlier report must not outlive its data
        elif pool is None:
            _draw(spec.name, chosen, root)
        else:
            pending.append(pool.submit(_draw, spec.name, chosen, root))
        charts.append(chart)
    for future in pending:
        future.result()
    return charts
