"""``run_bench.py report DIR`` and ``run_bench.py compare DIR_A DIR_B``: argparse glue only; the
work is in ``analysis`` (which reads results folders by schema)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from analysis.compare import Comparison, compare, failed, measure_label, verdict
from analysis.loader import ResultsError
from analysis.report import build_report
from contract.paths import PathError, check_output
from contract.schema import parse_run_dir_name
from targets.cli_args import number

from . import term_table
from .summary import show_summary
from .term_table import Column, fit_table

EXIT_REGRESSION = 1
EXIT_BAD_INPUT = 2
EXIT_NOT_COMPARABLE = 3
"""compare across different policies: nothing is called a regression, and the gate does not pass."""


def register(sub: argparse._SubParsersAction) -> None:
    report = sub.add_parser("report", help="rebuild charts, summary and report.html/.md of a results folder")
    report.add_argument("folder", type=Path, metavar="DIR", help="a results folder (results/<campaign>-<time>)")
    report.add_argument("--no-charts", action="store_true", help="summary and report without charts (quicker)")
    report.add_argument("--wide", action="store_true",
                        help="every column of the summary however wide the terminal (the default when piped)")
    report.set_defaults(func=cmd_report)

    cmp = sub.add_parser("compare", help="per-run deltas between two results folders, judged beyond their noise; "
                         "exit 1 on a regression or runs it cannot judge, 3 across different policies")
    cmp.add_argument("folder_a", type=Path, metavar="DIR_A", help="the baseline")
    cmp.add_argument("folder_b", type=Path, metavar="DIR_B", help="the candidate")
    cmp.add_argument("--threshold", type=number(float), default=2.0, metavar="RATIO",
                     help="flag a P99 that grew by this factor or more (default 2: doubled; finite, above 1); "
                     "with one run a side also a goodput that fell by it")
    cmp.add_argument("--tolerance", type=number(float), default=0.01,
                     help="flag over-admission (x L) or legit rejection rate rising by more than this, "
                     "CPU per request rising or goodput falling by more than this share (default 0.01; finite, >= 0)")
    cmp.add_argument("--all", action="store_true", help="every measure of every run, not only those that changed")
    cmp.add_argument("--allow-missing", action="store_true",
                     help="judge the rest: a run missing, unreadable, failed or degraded does not fail the comparison")
    cmp.add_argument("--wide", action="store_true", help="one column per name however wide the terminal (the default when piped)")
    cmp.set_defaults(func=cmd_compare)


def cmd_report(args: argparse.Namespace) -> int:
    started = time.perf_counter()

    def progress(i: int, n: int, name: str) -> None:
        print(f"analysed {i}/{n}: {name}", file=sys.stderr)

    def drawn(i: int, n: int, name: str) -> None:
        print(f"chart {i}/{n}: {name}", file=sys.stderr)

    try:
        if args.folder.is_dir():  # a results folder (the loader says if it is not) the report is written into
            check_output(args.folder, "report", folder=True)
        report = build_report(args.folder, progress, drawn, charts=not args.no_charts)
    except (ResultsError, PathError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for warning in report.warnings():
        print(f"warning: {warning}", file=sys.stderr)
    print(f"{len(report.rows)} runs, {len(report.charts)} charts in {time.perf_counter() - started:.1f} s")
    show_summary(report, term_table.console(wide=args.wide), args.wide, warnings=False)
    return 0 if report.rows else EXIT_REGRESSION


def cmd_compare(args: argparse.Namespace) -> int:
    """Verdict first, then the rows that changed (every row with ``--all``), as wide as the terminal."""
    try:
        result = compare(args.folder_a, args.folder_b, args.threshold, args.tolerance)
    except ResultsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    show_comparison(result, args, term_table.console(wide=args.wide))
    if not result.comparable:
        return EXIT_NOT_COMPARABLE
    return EXIT_REGRESSION if failed(result, args.allow_missing) else 0


def show_comparison(result: Comparison, args: argparse.Namespace, out: Console) -> None:
    for line in verdict(result, args.allow_missing):
        out.print(line, highlight=False, markup=False)
    out.print(f"A = {args.folder_a}\nB = {args.folder_b}", highlight=False, markup=False)
    shown = result.deltas if args.all else result.changed()
    if shown:
        title = f"every measure of the {len({d['run'] for d in shown})} runs in both" if args.all else \
            f"{len(shown)} changed of {len(result.deltas)} (--all for every row)"
        out.print(fit_table(title, [_named(d) for d in shown], COMPARE_COLUMNS, out, wide=args.wide))
    else:
        out.print(f"nothing changed in the {len(result.deltas)} measures of the runs in both", highlight=False)


def _named(delta: dict[str, Any]) -> dict[str, Any]:
    """A delta with the names the terminal table groups by (scenario, algorithm, store)."""
    parts = parse_run_dir_name(delta["run"]) or (delta["run"], "", "")
    return {**delta, "scenario": parts[0], "algorithm": parts[1], "store": parts[2]}


COMPARE_COLUMNS = (
    Column("measure", "measure", lambda d: measure_label(d["measure"])),
    Column("A", "A", lambda d: d["a_text"]),
    Column("B", "B", lambda d: d["b_text"]),
    Column("B - A", "B - A", lambda d: d["change_text"]),
)
