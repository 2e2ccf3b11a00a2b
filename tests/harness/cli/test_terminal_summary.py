"""The summary `run`, `report` and `simulate --campaign` print, at 80, 100 and 200 columns: the
answers first, then a table no line of which is wider than the terminal, naming the columns it
left out and how to see them; with --wide every column."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from analysis.report import build_report
from harness.cli.main import main
from harness.cli.summary import LIVE_COLUMNS, show_summary
from harness.cli.term_table import WIDE
from harness.sim.runner import execute, make_plan
from targets.algorithms import Policy

pytestmark = pytest.mark.slow  # a folder simulated and reported


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("summary") / "results"
    execute(make_plan(name="summary", policy=Policy(100, 60), algorithms=["fixed_window", "sliding_window_counter", "token_bucket"],
                      scenarios=["boundary_burst", "page_load_burst"], traces=[], algorithm_params=[], scenario_params=[],
                      seed=1), out)
    return build_report(out)


SAID = {"requests", "rejected", "legit rej.", "over-adm.", "P99 ms", "target CPU ms/1k", "µs/req"}
"""The columns these runs have a figure in."""


def _printed(report, width: int, wide: bool = False) -> str:
    out = Console(width=width, file=io.StringIO(), color_system=None, force_terminal=False)
    show_summary(report, out, wide)
    return out.file.getvalue()


def _hidden(text: str, width: int) -> list[str]:
    flat = " ".join(text.split())  # rich wraps the line at the terminal's width
    found = re.search(rf"not shown in {width} columns: (.*?); every column: run_bench\.py report (\S+) --wide", flat)
    return [] if found is None else found[1].split(", ")


@pytest.mark.parametrize("width", [80, 100, 200])
def test_the_answers_first_then_a_table_that_fits_and_says_what_it_left_out(report, width: int) -> None:
    text = _printed(report, width)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= width
    flat = " ".join(text.split())
    said = [" ".join(a.line().split()) for a in report.answers()]
    assert said and all(s in flat for s in said)
    assert flat.index(said[-1]) < flat.index("virtual campaign summary")  # the answers before the table
    hidden = _hidden(text, width)
    table = text[text.index("virtual campaign summary"):]
    said = [c.header for c in LIVE_COLUMNS if c.header in SAID]  # in flight and gen.-bound: no figure here
    assert hidden == said[len(said) - len(hidden):]  # whole columns, from the right
    assert "…" not in table and "<" not in table.replace("< res.", "")  # nothing shrunk to a stub
    assert lines[-1] == f"report: {report.root / 'report.html'}"
    if width == 80:
        assert hidden  # nine figures and the names do not fit 80 columns
    if width == 200:
        assert hidden == []


def test_report_prints_the_summary_and_wide_every_column(report, capsys) -> None:
    assert main(["report", str(report.root), "--wide"]) == 0
    out = capsys.readouterr().out
    assert report.answers()[0].question in out and "virtual campaign summary" in out
    assert _hidden(out, WIDE) == [] and all(header in out for header in SAID) and "in flight" not in out
