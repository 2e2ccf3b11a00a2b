"""Worker processes for analysis: runs and charts are independent of each other, and a report
of ten million rows is CPU-bound on every core it gets.

Workers are forked, so they inherit the modules already imported (numpy, pandas, pyarrow and
matplotlib take seconds to import afresh). A worker holds one task at a time, so peak memory
is about ``WORKERS`` times the largest run, plus the parent's small results.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from typing import Any

import pyarrow as pa

from contract.lifetime import die_with_parent

WORKERS = 2
"""This machine has two cores; more workers would only multiply the memory."""


class InlineExecutor(Executor):
    """Runs each task at once in this process: one core, or no ``fork`` on this platform."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as exc:  # the caller sees it from result(), as with a process pool
            future.set_exception(exc)
        return future


def give_back_freed() -> None:
    """What this process has freed, returned to the system before workers are forked: while they
    analyse, what the parent still holds from a large simulated run counts in the tree's peak (a
    trace of 1,000,000 requests: 972 MiB without this, 809 MiB with it, PSS summed). Python's
    cycles collected, arrow's pool released, glibc's heap trimmed (another C library: untouched)."""
    gc.collect()
    pa.default_memory_pool().release_unused()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def worker_pool(workers: int | None = None) -> Executor:
    """A pool of up to ``workers`` (default WORKERS) forked processes, never more than the
    cores; inline when that is one."""
    n = min(WORKERS if workers is None else workers, os.cpu_count() or 1)
    if n <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        return InlineExecutor()
    give_back_freed()
    return ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("fork"),  # no orphan if we are killed
                               initializer=die_with_parent, initargs=(os.getpid(),))
