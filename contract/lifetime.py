"""A child's lifetime bound to its parent's (Linux's ``PR_SET_PDEATHSIG``).

A process forked to do part of the work (a target node's server processes, the analysis's and the
traffic replay's pool workers) or started as a child (every process the harness starts:
``harness/processes/spawn.py``) must not outlive the process that started it: a pool worker whose
parent was killed (SIGKILL, a test's timeout) otherwise waits on its task queue forever, and a
target keeps its port listening, an orphan.
"""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import sys

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_PRCTL = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None
"""Resolved once, here: a child between fork and exec only calls it (no dlopen there)."""


def die_with_parent(parent: int, sig: int = signal.SIGTERM) -> None:
    """``sig`` to this process when ``parent`` (the process that forked it) dies; if it already has,
    stop now. The signal follows the forking *thread*: fork from a thread that lives as long as
    the work (the main thread, or spawn.py's one spawning thread). Elsewhere than Linux only the
    second half."""
    if _PRCTL is not None and _PRCTL(PR_SET_PDEATHSIG, sig) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno() or errno.EINVAL))
    if os.getppid() != parent:
        os.kill(os.getpid(), sig)
