"""Real target processes for the HTTP tests: started on free ports, always stopped."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from harness.processes.target import TargetProcess, start_target


class Starter:
    """``start(*argv)`` one target; ``start.many({name: argv})`` several in parallel
    (start-up is mostly imports: it overlaps well)."""

    def __init__(self, log_dir: Path, started: list[TargetProcess]) -> None:
        self.log_dir = log_dir
        self.started = started

    def __call__(self, *args: str, **kwargs) -> TargetProcess:
        target = start_target(list(args), log_dir=self.log_dir, **kwargs)
        self.started.append(target)
        return target

    def many(self, argvs: dict[str, list[str]]) -> dict[str, TargetProcess]:
        with ThreadPoolExecutor(len(argvs)) as pool:
            futures = {name: pool.submit(self, *argv) for name, argv in argvs.items()}
            return {name: f.result() for name, f in futures.items()}


def _stop_all(started: list[TargetProcess]) -> None:
    for target in started:
        target.stop()
    assert all(t.process.poll() is not None for t in started)


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Starter]:
    """Start targets inside one test; every one is stopped when the test ends."""
    started: list[TargetProcess] = []
    try:
        yield Starter(tmp_path / "logs", started)
    finally:
        _stop_all(started)


@pytest.fixture(scope="module")
def module_start(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Starter]:
    """Targets shared by a module's tests (start-up costs about a second each on this machine)."""
    started: list[TargetProcess] = []
    try:
        yield Starter(tmp_path_factory.mktemp("logs"), started)
    finally:
        _stop_all(started)
