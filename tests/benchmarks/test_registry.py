"""Every benchmark of the suite is under benchmarks/ and reachable as ``run_bench.py bench NAME``."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli.benchmarks import BENCHMARKS
from harness.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
HELPERS = {"targets_asgi", "targets_instructions", "raw_http", "connection_flood", "args"}
"""Modules that measure for a benchmark (``targets``; ``hostile``'s raw-socket client and its connection floods) or
parse its arguments (``args``) rather than being one."""


def test_every_benchmark_module_is_registered():
    modules = {p.stem for p in (ROOT / "benchmarks").glob("*.py")} - {"__init__"} - HELPERS
    assert {m.removeprefix("benchmarks.") for m, _ in BENCHMARKS.values()} == modules


@pytest.mark.parametrize("name", list(BENCHMARKS))
def test_bench_name_reaches_the_benchmarks_own_arguments(name, capsys):
    assert main(["bench", name, "--help"]) == 0
    assert capsys.readouterr().out.startswith(f"usage: run_bench.py bench {name}")


def test_an_unknown_benchmark_is_bad_input(capsys):
    assert main(["bench", "nope"]) == 2
    assert "invalid choice: 'nope'" in capsys.readouterr().err
