"""``run_bench.py bench validate``: how long ``validate --config`` takes on each product file the
suite ships from the product's own documentation (``campaigns/configs/``), simulated, against the
goal of under 5 s each.

Each file runs as a user runs it (``run_bench.py validate --config FILE``, a fresh process:
imports included), so the seconds are the ones a user waits on this machine.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from benchmarks.args import bench_parser

GOAL_S = 5.0
CONFIGS = Path(__file__).resolve().parent.parent / "campaigns" / "configs"


def validate_seconds(path: Path) -> tuple[float, int, str]:
    """Wall seconds of one ``validate --config``, its exit code and its verdict line."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "run_bench.py", "validate", "--config", str(path)], capture_output=True,
                          text=True, cwd=CONFIGS.parent.parent, timeout=600)
    seconds = time.perf_counter() - start
    verdict = next((line.strip() for line in done.stdout.splitlines() if line.startswith("validate ")),
                   (done.stderr.strip().splitlines() or ["(no output)"])[-1])
    return seconds, done.returncode, verdict


def main(argv: list[str]) -> int:
    parser = bench_parser("validate", __doc__.split("\n\n")[0])
    parser.parse_args(argv)
    table = Table(title=f"validate --config on each documented product file, simulated; goal < {GOAL_S:g} s each")
    for column in ("file", "seconds", "exit", "verdict", "goal"):
        table.add_column(column, justify="right" if column in ("seconds", "exit") else "left")
    for path in sorted(p for p in CONFIGS.iterdir() if p.is_file()):
        seconds, code, verdict = validate_seconds(path)
        table.add_row(path.name, f"{seconds:.1f}", str(code), verdict[:70], "met" if seconds < GOAL_S else "MISSED")
    Console(width=160).print(table)
    return 0
