"""The hooks a runner calls while it works (after Locust's ``event.py``: every hook declared
here with its arguments, each optional). A command line fills in the ones it displays.

``run_start(i, n, run)``
    Run ``i`` of ``n`` is about to start; ``run`` is the runner's plan of it (a live ``LiveRun``,
    a simulated ``SimRun``).
``counters(counters)``
    About every half second during a live run: the first target's ``/_bench/counters`` (its
    ``limits`` map of ``decisions`` and ``rejections`` per limit).
``load(figures)``
    About every half second during a live run: the load generator's side (harness/live/load_view.py:
    ``elapsed_s``, ``remaining_s``, the plan's ``offered_rps``, and Locust's ``achieved_rps``,
    ``requests``, ``failures``, ``p50_ms``, ``p99_ms`` once it has them).
``run_done(i, n, run, result)``
    Run ``i`` of ``n`` has ended; ``result`` is its run.json content (live) or its summary row
    (simulate), whatever its status.

A listener that fails is guarded as Locust's ``EventHook.fire`` guards its listeners: the error
is logged (once per hook) and the run goes on, so a display bug never loses a campaign's results.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

RunT = TypeVar("RunT")
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunnerEvents(Generic[RunT]):
    run_start: Callable[[int, int, RunT], None] | None = None
    counters: Callable[[dict[str, Any]], None] | None = None
    load: Callable[[dict[str, Any]], None] | None = None
    run_done: Callable[[int, int, RunT, dict[str, Any]], None] | None = None
    failed: set[str] = field(default_factory=set, compare=False)
    """The hooks whose listener has failed (each logged once)."""

    def started(self, i: int, n: int, run: RunT) -> None:
        self._fire("run_start", i, n, run)

    def counted(self, counters: dict[str, Any]) -> None:
        self._fire("counters", counters)

    def loaded(self, figures: dict[str, Any]) -> None:
        self._fire("load", figures)

    def done(self, i: int, n: int, run: RunT, result: dict[str, Any]) -> None:
        self._fire("run_done", i, n, run, result)

    def _fire(self, hook: str, *args: Any) -> None:
        """Call the hook's listener; an exception is logged once per hook and swallowed (as
        Locust's ``EventHook.fire`` does; KeyboardInterrupt and SystemExit still pass)."""
        listener = getattr(self, hook)
        if listener is None:
            return
        try:
            listener(*args)
        except Exception:
            if hook not in self.failed:
                self.failed.add(hook)
                log.exception("the %s listener failed; the run goes on (logged once)", hook)

    @property
    def wants_counters(self) -> bool:
        return self.counters is not None
