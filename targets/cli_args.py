"""Argument parsing shared by the two command lines (``python -m targets`` and ``run_bench.py``):
bad input is one line naming the problem and exit code 2, and ``KEY=VALUE`` is parsed once."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from contract.errors import BadInput
from contract.params import Bounds, parse_value

from .algorithms import PolicyError, parse_param

EXIT_BAD_INPUT = 2
HOST = "127.0.0.1"
"""Where a target listens by default, and every process the suite starts (loopback only)."""
SEED_BOUNDS = Bounds(0, 2**63 - 1)
"""A seed numpy takes (non-negative) and a plan file keeps exactly (a signed 64-bit integer)."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        print(f"error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT)


def number(kind: type, bounds: Bounds | None = None) -> Callable[[str], Any]:
    """argparse ``type=`` for a finite int or float within ``bounds``, by the one parameter
    parser (``contract.params``): every number a command line takes is checked where it enters."""
    def parse(text: str) -> Any:
        try:
            value = parse_value("value", kind, text)
            if bounds is not None:
                bounds.check("value", value)
        except BadInput as exc:
            raise argparse.ArgumentTypeError(str(exc).replace("value=", "", 1)) from None
        return value
    return parse


def key_value(text: str) -> tuple[str, str]:
    """argparse ``type=`` for ``KEY=VALUE`` arguments."""
    try:
        return parse_param(text)
    except PolicyError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
