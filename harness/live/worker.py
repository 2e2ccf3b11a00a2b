"""``run_bench.py worker --master HOST:PORT``: a machine's share of a campaign's load.

Every run of a campaign has its own Locust master, on the campaign's one fixed port. This
long-lived command starts one Locust worker process per run (``--plan-from-master``: the plan,
the clock and the client log travel over the Locust connection, so nothing here needs the
master's filesystem), waits for it, and starts the next once the run's master is gone, until
the master says the campaign is over (the worker's exit code) or no master gives it a plan for
``give_up_s``. A fresh process per run: Locust's worker ends with its master, and each run
starts from a clean heap.
"""

from __future__ import annotations

import socket
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from scenarios.remote import CAMPAIGN_OVER_EXIT, JOINED_FILE

from .runner import LOCUSTFILE
from .supervise import Interrupted, Processes, signals_interrupt, tail

GONE_WAIT_S = 10.0
"""After a run, wait this long at most for its master to close the port (so the next worker
does not greet a master that is shutting down)."""
WORKER_LOG = "worker.log"


def follow_campaign(host: str, port: int, give_up_s: float, workdir: Path | None = None,
                    say: Callable[[str], None] | None = None) -> int:
    """Join run after run; 0 when the campaign is over (or, after some runs, no master comes
    back), 1 when no master ever came or a worker failed before joining, 130 on SIGINT/SIGTERM."""
    say = say or _say
    workdir = workdir or Path(tempfile.mkdtemp(prefix="ratelimit-bench-worker-"))
    workdir.mkdir(parents=True, exist_ok=True)
    joined, log = workdir / JOINED_FILE, workdir / WORKER_LOG
    cmd = [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--worker", "--master-host", host,
           "--master-port", str(port), "--plan-from-master"]
    processes, runs = Processes(), 0
    say(f"worker: joining the master at {host}:{port} (working directory {workdir})")
    try:
        with signals_interrupt():
            idle_since = time.time()
            while True:
                joined.unlink(missing_ok=True)
                child = processes.start(cmd, log, workdir)
                while child.poll() is None:
                    if not joined.exists() and time.time() > idle_since + give_up_s:
                        say(f"worker: no master at {host}:{port} gave a plan within {give_up_s:g} s; "
                            f"{runs} run(s) done, stopping")
                        return 0 if runs else 1
                    time.sleep(0.2)
                processes.stop_all()
                if joined.exists():
                    runs, idle_since = runs + 1, time.time()
                    say(f"worker: run {runs} done (worker index {joined.read_text()})")
                elif child.returncode not in (0, CAMPAIGN_OVER_EXIT):
                    say(f"worker: Locust exited with {child.returncode} before joining:\n{tail(log)}")
                    return 1
                if child.returncode == CAMPAIGN_OVER_EXIT:
                    say(f"worker: the campaign is over after {runs} run(s)")
                    return 0
                _wait_gone(host, port)
    except Interrupted:
        say("worker: interrupted; the Locust worker stopped")
        return 130
    finally:
        processes.stop_all()


def _say(text: str) -> None:
    print(text, flush=True)  # a line as it happens, also when piped to a log


def _wait_gone(host: str, port: int) -> None:
    """Until nothing accepts on the master's port (the run's master has exited)."""
    deadline = time.time() + GONE_WAIT_S
    while time.time() < deadline:
        try:
            socket.create_connection((host, port), timeout=0.5).close()
        except OSError:
            return
        time.sleep(0.1)
