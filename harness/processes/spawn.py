"""Every child the suite starts (targets, peers, Locust, redis-servers, remote workers), started
one way: in a session of its own (its process group stopped as one, ``groups.py``) and bound to
this process's life (``contract.lifetime``): when the process that started it dies by any signal,
SIGKILL included, the child gets SIGTERM and stops its own (a target its server processes and
decision log, nginx and haproxy their workers), so no port stays listening. Locust's master gets
SIGKILL: on SIGTERM it waits for its workers, which may never come (the run is lost anyway); its
forked workers are bound to it in turn (``scenarios/locustfile.py``).

``PR_SET_PDEATHSIG`` fires when the *thread* that forked the child ends, and the runner starts
targets from a thread pool: so every child is forked by one thread of this process that lives as
long as the process (one per process: a forked process gets its own).
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from contract.lifetime import die_with_parent

_spawner: tuple[int, ThreadPoolExecutor] | None = None


def _thread() -> ThreadPoolExecutor:
    """This process's one spawning thread (a fork inherits no threads: it makes its own)."""
    global _spawner
    if _spawner is None or _spawner[0] != os.getpid():
        _spawner = (os.getpid(), ThreadPoolExecutor(1, thread_name_prefix="spawn"))
    return _spawner[1]


def spawn(cmd: Sequence[str], death_signal: int = signal.SIGTERM, **popen: Any) -> subprocess.Popen:
    """``subprocess.Popen(cmd, **popen)`` in a session of its own, sent ``death_signal`` when this
    process dies (SIGKILL for a child whose SIGTERM may wait on others: Locust's master)."""
    parent = os.getpid()
    return _thread().submit(subprocess.Popen, list(cmd), start_new_session=True,
                            preexec_fn=lambda: die_with_parent(parent, death_signal), **popen).result()
