"""The hooks a runner calls while it works (after Locust's ``event.py``: every hook declared
here with its arguments, each optional). A command line fills in the ones it displays.

``run_start(i, n, run)``
    Run ``i`` of ``n`` is about to start; ``run`` is the runner's plan of it (a live ``LiveRun``).
``counters(counters)``
    About every half second during a live run: the first target's ``/_bench/counters`` (its
    ``limits`` map of ``decisions`` and ``rejections`` per limit).
``run_done(i, n, run, result)``
    Run ``i`` of ``n`` has ended; ``result`` is its run.json content (live) or its summary row
    (simulate), whatever its status.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

RunT = TypeVar("RunT")


@dataclass(frozen=True)
class RunnerEvents(Generic[RunT]):
    run_start: Callable[[int, int, RunT], None] | None = None
    counters: Callable[[dict[str, Any]], None] | None = None
    run_done: Callable[[int, int, RunT, dict[str, Any]], None] | None = None

    def started(self, i: int, n: int, run: RunT) -> None:
        if self.run_start is not None:
            self.run_start(i, n, run)

    def counted(self, counters: dict[str, Any]) -> None:
        if self.counters is not None:
            self.counters(counters)

    def done(self, i: int, n: int, run: RunT, result: dict[str, Any]) -> None:
        if self.run_done is not None:
            self.run_done(i, n, run, result)

    @property
    def wants_counters(self) -> bool:
        return self.counters is not None
