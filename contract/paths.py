"""Every path the user names, checked where it enters: a file to read, a file or a folder to write.

A path that cannot be used is bad input (one line, exit 2) found before anything is written,
rather than an OSError's traceback halfway through a run: a file that is a folder, not UTF-8 or
not readable; an output under a regular file, on a read-only filesystem, or an existing file
named where a folder is wanted.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import BadInput


class PathError(BadInput):
    """A path given on the command line or in a config file that cannot be read or written."""


def read_input(path: Path, what: str = "") -> str:
    """The text of a UTF-8 file the user names (``what``: the flag or field it came from)."""
    name = f"{what} {path}" if what else str(path)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PathError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise PathError(f"{name}: is a folder, not a file") from None
    except UnicodeDecodeError as exc:
        raise PathError(f"{name}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise PathError(f"{name}: cannot be read ({exc.strerror})") from None


def check_output(path: Path, what: str, *, folder: bool) -> None:
    """``path`` can be created (or replaced, a file) by this user: its nearest existing ancestor
    is a writable folder, and an existing ``path`` is of the kind wanted."""
    if path.exists():
        if folder and not path.is_dir():
            raise PathError(f"{what} {path}: is a file, not a folder")
        if not folder and path.is_dir():
            raise PathError(f"{what} {path}: is a folder, not a file")
        if not os.access(path if folder else path.parent, os.W_OK):
            raise PathError(f"{what} {path}: not writable")
        return
    parent = path.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise PathError(f"{what} {path}: {parent} is a file, not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise PathError(f"{what} {path}: {parent} is not writable (read-only filesystem or no permission)")


def yaml_problem(exc: Exception) -> str:
    """A YAML parser's error on one line, what is wrong and where (PyYAML's own text spans 4-8
    lines); read by its attributes so that the contract need not import the parser."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or (str(exc).splitlines() or ["malformed"])[0]
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}" if mark is not None else problem
