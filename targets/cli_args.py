"""Argument parsing shared by the two command lines (``python -m targets`` and ``run_bench.py``):
bad input is one line naming the problem and exit code 2, and ``KEY=VALUE`` is parsed once."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from .algorithms import PolicyError, parse_param

EXIT_BAD_INPUT = 2
HOST = "127.0.0.1"
"""Where a target listens by default, and every process the suite starts (loopback only)."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        print(f"error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT)


def key_value(text: str) -> tuple[str, str]:
    """argparse ``type=`` for ``KEY=VALUE`` arguments."""
    try:
        return parse_param(text)
    except PolicyError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
