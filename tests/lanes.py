"""The two lanes of the suite: every test that starts a process is marked ``process``, and
``make test-fast`` runs the rest (``-m "not process"``): what needs no process, in under two minutes.

A test gets the mark from a fixture of PROCESS_FIXTURES it uses (even through another fixture),
from its module (``pytestmark = pytest.mark.process``) or on itself. One that starts a process
(subprocess, and so asyncio's) without it fails, so the fast lane never silently waits on one.
A forked worker pool (analysis/pool.py) is no started process: it copies the test's own.
"""

from __future__ import annotations

import platform
import subprocess
from collections.abc import Callable, Iterator
from typing import Any

import pytest

PROCESS = "process"
SLOW = "slow"
PROCESS_FIXTURES = frozenset({"start", "module_start", "redis_server", "redis_cluster"})
"""The shared fixtures that start processes: targets (tests/targets/conftest.py) and redis-servers
(tests/targets/stores/redis/conftest.py)."""

unmarked: list[str] = []
"""The running test's id while it lacks the mark (its fixtures' set-up and tear-down included)."""
started: list[str] = []
"""What it tried to start: checked after the test, as the code under test may swallow the refusal."""


class UnmarkedProcess(RuntimeError):
    """A test without the ``process`` mark started a process."""


def _refusing(execute_child: Callable[..., Any]) -> Callable[..., Any]:
    def guarded(self: subprocess.Popen, args: Any, *rest: Any, **kwargs: Any) -> Any:
        if unmarked:
            started.append(repr(args))
            raise UnmarkedProcess(f"{unmarked[0]} starts {args!r} without @pytest.mark.{PROCESS}: mark it, its module "
                                  "(pytestmark), or start it through a fixture of tests/lanes.py PROCESS_FIXTURES")
        return execute_child(self, args, *rest, **kwargs)

    return guarded


def pytest_configure(config: pytest.Config) -> None:
    platform.uname().processor  # noqa: B018  # cached now: its one `uname -p` is no test's
    import matplotlib.font_manager  # noqa: F401  # on a new machine it runs `fc-list` once to build its font cache: not a test's process
    subprocess.Popen._execute_child = _refusing(subprocess.Popen._execute_child)  # type: ignore[attr-defined]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if PROCESS_FIXTURES.intersection(item.fixturenames):
            item.add_marker(PROCESS)
    # the files with a test that starts processes or is slow first, each file kept whole: `make test`
    # hands whole files to four workers in this order (--no-loadscope-reorder), so the long ones
    # start at once and the short ones fill in at the end, instead of one long file starting last
    heavy = {item.path for item in items if item.get_closest_marker(PROCESS) or item.get_closest_marker(SLOW)}
    items.sort(key=lambda item: item.path not in heavy)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    started.clear()
    if item.get_closest_marker(PROCESS) is None:
        unmarked.append(item.nodeid)
    try:
        return (yield)
    finally:
        unmarked.clear()


@pytest.fixture(autouse=True)
def no_unmarked_process() -> Iterator[None]:
    """Fails a test after it ran if it started a process unmarked (the refusal itself may have been caught)."""
    yield
    if started:
        pytest.fail(f"started without @pytest.mark.{PROCESS}: {', '.join(started)}")
