"""A child in its own session stopped with its whole process group, written once for every child
the suite starts (targets, peers, Locust, redis-servers): SIGTERM first when it may stop
gracefully (a target flushes its decision log), SIGKILL after a timeout, then SIGKILL to whatever
is left of the group, and the child reaped."""

from __future__ import annotations

import os
import signal
import subprocess
from contextlib import suppress


def signal_group(pid: int, sig: int) -> None:
    """``sig`` to the group of ``pid`` (nothing when it is gone)."""
    with suppress(ProcessLookupError):
        os.killpg(pid, sig)


def stop_group(process: subprocess.Popen, timeout_s: float = 10.0, *, graceful: bool = True) -> int | None:
    """Stop ``process`` and its group; returns its exit code. ``graceful``: SIGTERM and up to
    ``timeout_s`` to exit before SIGKILL; otherwise SIGKILL at once (a server with nothing to flush)."""
    if graceful and process.poll() is None:
        signal_group(process.pid, signal.SIGTERM)
        with suppress(subprocess.TimeoutExpired):
            process.wait(timeout_s)
    signal_group(process.pid, signal.SIGKILL)  # stragglers in the group, if any
    return process.wait(timeout_s if not graceful else None)
