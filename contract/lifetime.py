"""A forked worker's lifetime bound to its parent's (Linux's ``PR_SET_PDEATHSIG``).

A process forked to do part of the work (a target node's server processes, the analysis's and the
traffic replay's pool workers) must not outlive the process that forked it: a pool worker whose
parent was killed (SIGKILL, a test's timeout) otherwise waits on its task queue forever, an orphan.
"""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import sys

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent(parent: int) -> None:
    """SIGTERM this process when ``parent`` (the process that forked it) dies; if it already has,
    stop now. The signal follows the forking *thread*: fork from a thread that lives as long as
    the work (the main thread, in every caller here). Elsewhere than Linux only the second half."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM) != 0:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno() or errno.EINVAL))
    if os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGTERM)
