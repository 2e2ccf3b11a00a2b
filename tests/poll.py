"""The one way a test waits for something a process does in its own time (a flush, a child
started, a port closed): polled until it holds or the time is out, the last value returned for
the test to assert on, so a failure says what was seen and a busy machine only waits longer."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def until(condition: Callable[[], T], timeout_s: float, every_s: float = 0.1) -> T:
    """``condition()`` again every ``every_s`` until it is truthy or ``timeout_s`` have passed; its last value."""
    deadline = time.monotonic() + timeout_s
    while not (value := condition()) and time.monotonic() < deadline:
        time.sleep(every_s)
    return value
