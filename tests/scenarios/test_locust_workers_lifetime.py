"""A Locust worker forked by ``--processes`` dies with its master from the fork on, not only once
Locust's init has run: a master SIGKILLed between the fork and the worker's init (the worker still
connecting to it) left the worker retrying for Locust's 5 minutes, an orphan (CI's orphan test)."""

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

pytestmark = [pytest.mark.process,  # a process that imports the locustfile, forks, and dies
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")]

# Forks the way Locust's --processes does (gevent.fork, after the locustfile's import); the child
# stands for a worker before its init: it only waits. The master then dies by SIGKILL.
MASTER = textwrap.dedent("""
    import os, signal, sys, time
    import gevent
    import scenarios.locustfile
    pid = gevent.fork()
    if pid == 0:
        time.sleep(120)
        os._exit(0)
    print(pid, flush=True)
    sys.stdin.readline()
    os.kill(os.getpid(), signal.SIGKILL)
""")


def test_a_worker_forked_before_its_init_dies_with_its_killed_master():
    master = subprocess.Popen([sys.executable, "-c", MASTER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, cwd=os.getcwd(), start_new_session=True)
    try:
        worker = psutil.Process(int(master.stdout.readline()))
        assert worker.ppid() == master.pid
        master.stdin.write("\n")
        master.stdin.flush()
        assert master.wait(timeout=30) == -signal.SIGKILL
        gone = until(lambda: not (worker.is_running() and worker.status() != psutil.STATUS_ZOMBIE), 30, every_s=0.05)
        assert gone, f"worker {worker.pid} outlived its SIGKILLed master"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(master.pid, signal.SIGKILL)
