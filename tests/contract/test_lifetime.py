"""A forked pool worker dies with the process that forked it, even when that one is SIGKILLed
(a test's timeout, the OOM killer): before, the analysis's workers waited on their queue forever."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap

import psutil
import pytest

from tests.poll import until

pytestmark = pytest.mark.process  # every test here starts processes

POOL = textwrap.dedent("""
    import os, sys, time
    from analysis.pool import worker_pool
    pool = worker_pool(2)
    pids = {pool.submit(os.getpid).result() for _ in range(8)}
    print(" ".join(map(str, sorted(pids))), flush=True)
    time.sleep(600)
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_pool_workers_end_when_their_parent_is_killed():
    parent = subprocess.Popen([sys.executable, "-c", POOL], stdout=subprocess.PIPE, text=True,
                              cwd=os.getcwd(), start_new_session=True)
    try:
        workers = [psutil.Process(int(p)) for p in parent.stdout.readline().split()]
        assert workers and all(w.ppid() == parent.pid for w in workers)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=30)
        until(lambda: not any(w.is_running() and w.status() != psutil.STATUS_ZOMBIE for w in workers), 30, every_s=0.05)
        assert not [w.pid for w in workers if w.is_running() and w.status() != psutil.STATUS_ZOMBIE]
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(parent.pid, signal.SIGKILL)
