"""An analysed results folder: its runs' rows and the charts drawn, what the report is built from."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .analyze import FolderAnalysis
from .answers import Answer, answers
from .charts import Chart
from .spread import group


@dataclass
class Report:
    root: Path
    analysis: FolderAnalysis
    charts: list[Chart]  # the charts drawn: a chart without data is not drawn, and not mentioned
    rows: list[dict[str, Any]]
    """One per run (each repeat its own), as summary.json holds them."""
    charts_skipped: bool = False
    """No chart was drawn, as asked (``--no-charts``): said first among the warnings."""

    @property
    def groups(self) -> list[dict[str, Any]]:
        """One per run with its repeats merged: the median and its spread (analysis.spread)."""
        return group(self.rows)

    def warnings(self) -> list[str]:
        """Everything a reader must know before trusting the numbers."""
        progress = self.analysis.results.progress
        first = [line] if progress is not None and (line := progress.line()) else []
        if self.charts_skipped:
            first.append(f"no charts drawn (--no-charts): run_bench.py report {self.root} draws them")
        return first + [f"run left out: {x.name}: {x.reason}" for x in self.analysis.left_out] + self.analysis.warnings

    def answers(self) -> list[Answer]:
        return answers(self.groups)

    def chart_for(self, answer: Answer) -> Chart | None:
        """The answer's chart: the one of its first run's scenario when the chart is drawn per scenario."""
        scenario = next((r["scenario"] for r in self.groups if r["run"] == answer.runs[0]), None)
        return next((c for c in self.charts if c.spec == answer.chart and c.scenario in (None, scenario)), None)
