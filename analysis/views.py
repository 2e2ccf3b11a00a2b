"""What the notebook shows that the report does not: who got the 429s, key by key; one key's
decisions over time; an A/B of two runs with their intervals. It reads a folder's analysis and
writes nothing: tables come back as frames of the report's formatted cells, figures as matplotlib
Figures (the notebook shows them as PNG bytes in memory, never as files in the folder).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from contract.schema import RUNS_DIR

from .analyze import FolderAnalysis, RunAnalysis
from .charts import WIDTH_IN
from .compare import MEASURES
from .figure import new_figure
from .keys import per_key
from .labels import policy_text
from .loader import ResultsError
from .palette import colour
from .spread import apart, exact, interval, with_spread

if TYPE_CHECKING:
    from matplotlib.figure import Figure

Row = dict[str, Any]
REFUSED_COLOUR = "#d62728"


def newest_results(results: Path) -> Path:
    """The most recently written results folder under ``results`` (a folder with ``runs/``)."""
    found = [p for p in Path(results).iterdir() if (p / RUNS_DIR).is_dir() and not p.name.startswith(".")] \
        if Path(results).is_dir() else []
    if not found:
        raise ResultsError(f"{results}: no results folder in it (make bench, or run_bench.py simulate ... --out DIR, makes one)")
    return max(found, key=lambda p: (p / RUNS_DIR).stat().st_mtime)


def folder_named(value: str, root: Path) -> Path:
    """A folder the user named (``RATELIMIT_RESULTS=results/...``): a relative path is the
    repository root's, where ``make notebook`` runs, not the notebook's folder, where its kernel does."""
    path = Path(value).expanduser()
    return path if path.is_absolute() else root / path


def png(fig: Figure) -> bytes:
    """A figure as PNG bytes, in memory."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    return buf.getvalue()


def busiest_scenario(folder: FolderAnalysis) -> str:
    """The scenario whose runs refused the most requests: where the per-key view has most to say."""
    totals: dict[str, int] = {}
    for a in folder.runs:
        totals[a.row["scenario"]] = totals.get(a.row["scenario"], 0) + int(a.row["rejected"])
    if not totals:
        raise ResultsError("the folder has no whole run to show")
    return max(totals, key=lambda s: totals[s])


def scenario_runs(folder: FolderAnalysis, scenario: str) -> list[RunAnalysis]:
    """The scenario's runs, each run's first repeat (the per-run panels of the report draw the same)."""
    runs = [a for a in folder.runs if a.row["scenario"] == scenario and a.row.get("repeat") in (None, 1)]
    if not runs:
        raise ResultsError(f"no run of scenario {scenario!r}; the folder has {', '.join(sorted({a.row['scenario'] for a in folder.runs}))}")
    return runs


def _label(a: RunAnalysis) -> str:
    return a.row["algorithm"] if a.row["store"] == "memory" else f"{a.row['algorithm']} ({a.row['store']})"


def key_frames(runs: Sequence[RunAnalysis]) -> dict[str, pd.DataFrame]:
    """Per run (its label), analysis.keys.per_key of its decision log."""
    return {_label(a): per_key(a.run.decisions(), a.run.info.policy.window_s) for a in runs}


def key_view(runs: Sequence[RunAnalysis], top: int = 15) -> tuple[pd.DataFrame, Figure]:
    """Who got the 429s: the ``top`` keys by refusals over the runs, each run's refused / requests
    as the report writes counts, and a heat map of the refused share per key and run."""
    frames = key_frames(runs)
    joined = pd.concat({label: f.set_index("key") for label, f in frames.items()}, axis=1)
    refused = joined.xs("refused", axis=1, level=1).fillna(0)
    requests = joined.xs("requests", axis=1, level=1).fillna(0)
    keys = refused.sum(axis=1).sort_values(ascending=False, kind="stable").index[:top]
    classes = _key_classes(runs[0], keys)
    table = pd.DataFrame({"class": classes}, index=pd.Index(keys, name="key"))
    for label in frames:
        table[f"{label} refused / requests"] = [f"{int(refused.at[k, label]):,} / {int(requests.at[k, label]):,}" for k in keys]
    share = (refused.loc[keys] / requests.loc[keys].where(requests.loc[keys] > 0)).fillna(0).to_numpy()
    fig = new_figure(figsize=(WIDTH_IN, 0.9 + 0.32 * len(keys)), layout="constrained")
    ax = fig.subplots()
    image = ax.imshow(share, aspect="auto", cmap="Reds", vmin=0, vmax=1)
    ax.set_xticks(range(len(frames)), list(frames), rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(len(keys)), [f"{k} ({c})" for k, c in zip(keys, classes)], fontsize=8)
    for (i, j), value in np.ndenumerate(refused.loc[keys].to_numpy()):
        ax.text(j, i, f"{int(value):,}", ha="center", va="center", fontsize=7, color="white" if share[i, j] > 0.6 else "black")
    fig.colorbar(image, ax=ax, label="share of the key's requests refused")
    ax.set_title(f"Who got the 429s: {runs[0].row['scenario']} · {policy_text(*_policy(runs[0]))} "
                 f"(the {len(keys)} most refused keys; cells: refused)", fontsize=10)
    return table, fig


def _policy(a: RunAnalysis) -> tuple[float, float, float | None]:
    return a.row["limit"], a.row["window_s"], a.row.get("burst")


def _key_classes(a: RunAnalysis, keys: Sequence[str]) -> list[str]:
    df = a.run.decisions()
    first = df.assign(key=df["key"].astype(str)).drop_duplicates("key").set_index("key")["client_class"].astype(str)
    return [first.get(k, "-") for k in keys]


def most_refused_key(runs: Sequence[RunAnalysis]) -> str:
    """The key refused most over the runs (the timeline's default)."""
    frames = key_frames(runs)
    total = pd.concat([f.set_index("key")["refused"] for f in frames.values()], axis=1).fillna(0).sum(axis=1)
    return str(total.sort_values(ascending=False, kind="stable").index[0])


def timeline(runs: Sequence[RunAnalysis], key: str) -> Figure:
    """One key's decisions over time, one row per run: admitted ticks in the algorithm's colour
    above, refused ticks in red below; time from the run's start."""
    fig = new_figure(figsize=(WIDTH_IN, 0.9 + 0.55 * len(runs)), layout="constrained")
    ax = fig.subplots()
    labels = []
    for i, a in enumerate(runs):
        df = a.run.decisions()
        mine = df.loc[df["key"].astype(str) == key]
        t = mine["t"].to_numpy(dtype=np.float64) - a.origin
        allowed = mine["allowed"].to_numpy(dtype=bool)
        y = len(runs) - 1 - i
        ax.eventplot([t[allowed]], lineoffsets=y + 0.18, linelengths=0.32, colors=colour(a.row["algorithm"]), linewidths=0.8)
        ax.eventplot([t[~allowed]], lineoffsets=y - 0.18, linelengths=0.32, colors=REFUSED_COLOUR, linewidths=0.8)
        labels.append(f"{_label(a)}: {int(allowed.sum()):,} admitted, {int((~allowed).sum()):,} refused")
    ax.set_yticks(range(len(runs)), labels[::-1], fontsize=8)
    ax.set_xlabel("seconds from the run's start (upper ticks: admitted; lower, red: refused)", fontsize=9)
    ax.set_title(f"Decisions for key {key!r}: {runs[0].row['scenario']} · {policy_text(*_policy(runs[0]))}", fontsize=10)
    return fig


def _differ(a: dict[str, Any], b: dict[str, Any], field: str) -> str:
    """Whether A and B differ beyond their noise; two virtual runs have none: equal or not."""
    if exact(a, b):
        return "differ" if a[field] != b[field] else "equal"
    return "beyond noise" if apart(a, b, field) else "within noise"


def ab_table(a: Row, b: Row) -> pd.DataFrame:
    """Every measure compare shows, A and B as the report writes them (median and interval), the
    change, and whether the two differ beyond their noise (analysis.spread.apart)."""
    rows = []
    for field, label, fmt in MEASURES:
        va, vb = a.get(field), b.get(field)
        if va is None and vb is None:
            continue
        both = va is not None and vb is not None
        rows.append({"measure": label, "A": "n/a" if va is None else with_spread(a, field, fmt(va), fmt),
                     "B": "n/a" if vb is None else with_spread(b, field, fmt(vb), fmt),
                     "B - A": ("+" if vb >= va else "-") + fmt(abs(vb - va)) if both else "n/a",
                     "differ": _differ(a, b, field) if both else "n/a"})
    return pd.DataFrame(rows).set_index("measure")


def ab_figure(a: Row, b: Row, names: tuple[str, str] = ("A", "B")) -> Figure:
    """One panel per measure both runs have: each run's figure with its interval as a whisker."""
    fields = [(f, label) for f, label, _ in MEASURES if a.get(f) is not None and b.get(f) is not None]
    fig = new_figure(figsize=(WIDTH_IN, 2.6), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, max(1, len(fields))))
    for ax, (field, label) in zip(axes, fields):
        for x, row in enumerate((a, b)):
            low, high = interval(row, field)
            ax.errorbar([x], [row[field]], yerr=[[row[field] - low], [high - row[field]]], fmt="o", capsize=4,
                        color=colour(row["algorithm"]))
        ax.set_xticks([0, 1], names, fontsize=8)
        ax.set_xlim(-0.6, 1.6)
        ax.set_title(label, fontsize=8)
        ax.tick_params(labelsize=7)
    fig.suptitle(f"A: {a['run']}  vs  B: {b['run']} (whiskers: the interval of each figure)", fontsize=10)
    return fig
