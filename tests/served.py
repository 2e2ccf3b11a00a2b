"""Several targets started at once for a module's tests (start-up costs a second or more each on
this machine; in parallel the module pays for one), stopped however the module ends."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from harness.processes.target import TargetProcess, start_target


@contextmanager
def targets(argv: dict[str, list[str]], log_dir: Path) -> Iterator[dict[str, TargetProcess]]:
    """``name -> target`` for ``name -> its command line``."""
    with ThreadPoolExecutor(len(argv)) as pool:
        futures = {name: pool.submit(start_target, a, log_dir=log_dir) for name, a in argv.items()}
        started = {name: f.result() for name, f in futures.items()}
    try:
        yield started
    finally:
        for target in started.values():
            target.stop()
