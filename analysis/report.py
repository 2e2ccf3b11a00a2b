"""``report.html`` and ``report.md``, rebuilt from a results folder's raw files, with summary.json/csv
and the charts (``charts/``, which both link) beside them: one structure (``analysis.document``)
rendered by templates (``analysis.page``). Both open with the answers to the questions a user
brings; the HTML folds everything after them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from contract.atomic import write_text
from contract.schema import KEYS_FILE, REPORT_HTML, REPORT_MD
from contract.summary import write_summary

from .analysed import Report
from .analyze import RunAnalysis, analyze
from .charts import check_panels, draw_all
from .document import document
from .figure import load as load_matplotlib
from .keys import KEY_COLUMNS
from .loader import load_results
from .page import render
from .pool import worker_pool


def write_keys(root: Path, runs: Sequence[RunAnalysis]) -> None:
    """keys.csv: every trace run's kept keys, the run's name first; not written when no run replayed a trace."""
    frames = [a.keys.assign(run=a.run.name)[["run", *KEY_COLUMNS]] for a in runs if a.keys is not None]
    if frames:
        write_text(root / KEYS_FILE, pd.concat(frames, ignore_index=True).to_csv(index=False))


def render_html(report: Report) -> str:
    return render(document(report), "html")


def render_md(report: Report) -> str:
    return render(document(report), "md")


def build_report(root: Path, on_run: Callable[[int, int, str], None] | None = None,
                 on_chart: Callable[[int, int, str], None] | None = None, charts: bool = True) -> Report:
    """Analyse the folder and write summary.json/csv, charts/, report.html and report.md;
    ``on_run`` and ``on_chart`` as each run is analysed and each chart drawn. Without ``charts``
    none is drawn (matplotlib's layout is most of a small report's time: a pipeline that reads only
    the summary skips it) and the report says so first.

    Raises ResultsError when ``root`` is not a results folder; runs that are not whole are left
    out and named in the report's warnings."""
    root = Path(root)
    if charts:
        load_matplotlib()  # before the workers fork: each inherits it (the charts are drawn there)
    with worker_pool() as pool:
        analysis = analyze(load_results(root), on_run, pool)
        check_panels(analysis.runs)
        rows = write_summary(root, analysis.rows)
        write_keys(root, analysis.runs)
        drawn = draw_all(analysis.runs, root, pool=pool, on_chart=on_chart) if charts else []
        report = Report(root, analysis, drawn, rows, charts_skipped=not charts)
    write_text(root / REPORT_HTML, render_html(report))
    write_text(root / REPORT_MD, render_md(report))
    return report
