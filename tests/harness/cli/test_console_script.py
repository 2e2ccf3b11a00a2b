"""The ``ratelimit-bench`` console script (pyproject [project.scripts]) is run_bench.py's CLI:
its entry point resolves to ``harness.cli.main:main`` and answers ``--help``."""

from __future__ import annotations

import tomllib
from importlib import import_module
from pathlib import Path

import pytest

from harness.cli.main import main

PYPROJECT = Path(__file__).resolve().parents[3] / "pyproject.toml"


def test_the_console_script_resolves_to_the_cli_and_answers_help(capsys: pytest.CaptureFixture[str]) -> None:
    target = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["scripts"]["ratelimit-bench"]
    module, _, attr = target.partition(":")
    entry = getattr(import_module(module), attr)
    assert entry is main
    assert entry(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: ") and "simulate" in out and "validate" in out
