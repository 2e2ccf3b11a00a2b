"""``run_bench.py report DIR`` and ``run_bench.py compare DIR_A DIR_B``: argparse glue only; the
work is in ``analysis`` (which reads results folders by schema)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from analysis.compare import compare, format_text
from analysis.loader import ResultsError
from analysis.report import build_report
from contract.schema import REPORT_HTML

EXIT_REGRESSION = 1
EXIT_BAD_INPUT = 2


def register(sub: argparse._SubParsersAction) -> None:
    report = sub.add_parser("report", help="rebuild charts, summary and report.html/.md of a results folder")
    report.add_argument("folder", type=Path, metavar="DIR", help="a results folder (results/<campaign>-<time>)")
    report.set_defaults(func=cmd_report)

    cmp = sub.add_parser("compare", help="per-run deltas between two results folders; exit 1 on a regression")
    cmp.add_argument("folder_a", type=Path, metavar="DIR_A", help="the baseline")
    cmp.add_argument("folder_b", type=Path, metavar="DIR_B", help="the candidate")
    cmp.add_argument("--threshold", type=float, default=2.0, metavar="RATIO",
                     help="flag a P99 that grew by this factor or more (default 2: doubled)")
    cmp.add_argument("--tolerance", type=float, default=0.01,
                     help="flag over-admission (x L) or legit rejection rate rising by more than this (default 0.01)")
    cmp.set_defaults(func=cmd_compare)


def cmd_report(args: argparse.Namespace) -> int:
    started = time.perf_counter()

    def progress(i: int, n: int, name: str) -> None:
        print(f"analysed {i}/{n}: {name}", file=sys.stderr)

    def drawn(i: int, n: int, name: str) -> None:
        print(f"chart {i}/{n}: {name}", file=sys.stderr)

    try:
        report = build_report(args.folder, progress, drawn)
    except ResultsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for warning in report.warnings():
        print(f"warning: {warning}", file=sys.stderr)
    print(f"{len(report.rows)} runs, {len(report.charts)} charts in {time.perf_counter() - started:.1f} s")
    print(f"report: {report.root / REPORT_HTML}")
    return 0 if report.rows else EXIT_REGRESSION


def cmd_compare(args: argparse.Namespace) -> int:
    if args.threshold <= 1.0 or args.tolerance < 0:
        print("error: --threshold must be > 1 and --tolerance >= 0", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        result = compare(args.folder_a, args.folder_b, args.threshold, args.tolerance)
    except ResultsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    sys.stdout.write(format_text(result, str(args.folder_a), str(args.folder_b)))
    return EXIT_REGRESSION if result.regressions else 0
