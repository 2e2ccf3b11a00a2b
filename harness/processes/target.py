"""Start and stop target processes from Python (the harness and the tests).

Each target runs ``python -m targets`` in its own session (so its process group can be
signalled as a whole), on a free port with its admin listener on another (``admin_url``), and
counts as ready once ``GET /healthz`` answers (and its admin listener: a node of several
processes opens it last).
``stop`` sends SIGTERM (uvicorn shuts down gracefully and the decision log is flushed), then
SIGKILL after a timeout. Use ``running_target`` (a context manager) so nothing is orphaned.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from targets.cli_args import EXIT_BAD_INPUT

from .groups import stop_group
from .ports import HOST, free_ports
from .spawn import spawn

EXIT_PORT_IN_USE = EXIT_BAD_INPUT
"""How a target says its port was taken (it exits 2 with "in use" for every bad input)."""
PORT_ATTEMPTS = 3
ROOT = Path(__file__).resolve().parents[2]
"""Where ``python -m targets`` is found."""


class TargetError(RuntimeError):
    """A target did not come up; the message carries its stderr."""


@dataclass
class TargetProcess:
    process: subprocess.Popen
    port: int
    stderr_path: Path
    admin_port: int

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def admin_url(self) -> str:
        """Where ``/_bench/*`` answers (never on ``url``)."""
        return f"http://{HOST}:{self.admin_port}"

    @property
    def pid(self) -> int:
        return self.process.pid

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace") if self.stderr_path.exists() else ""

    def stop(self, timeout_s: float = 10.0) -> int:
        """SIGTERM to the whole group, SIGKILL after ``timeout_s``; returns the exit code."""
        stop_group(self.process, timeout_s)
        return self.process.returncode


def start_target(args: Sequence[str], *, log_dir: Path, port: int | None = None, admin_port: int | None = None,
                 ready_timeout_s: float = 30.0, env: dict[str, str] | None = None,
                 launcher: Sequence[str] = ()) -> TargetProcess:
    """Start ``python -m targets --port P --admin-port A <args>`` and wait until it answers /healthz.

    Without ``port`` (``admin_port``) a free one is picked (and retried if someone takes it
    first); ``launcher``: a command the target runs under (the benchmark's valgrind)."""
    log_dir.mkdir(parents=True, exist_ok=True)
    for attempt in range(PORT_ATTEMPTS if port is None or admin_port is None else 1):
        spare = iter(free_ports(2))
        chosen = port or next(spare)
        admin = admin_port or next(p for p in spare if p != chosen)
        stderr_path = log_dir / f"target-{chosen}.stderr"
        with stderr_path.open("wb") as err:
            process = spawn(
                [*launcher, sys.executable, "-m", "targets", "--port", str(chosen), "--admin-port", str(admin), *args],
                stdin=subprocess.DEVNULL, stdout=err, stderr=err, env=env, cwd=ROOT,
            )
        target = TargetProcess(process, chosen, stderr_path, admin)
        try:
            wait_ready(target, ready_timeout_s)
            return target
        except TargetError:
            target.stop()
            picked = [p for p, given in ((chosen, port), (admin, admin_port)) if given is None]
            taken = process.returncode == EXIT_PORT_IN_USE and any(f"port {p} on" in target.stderr() for p in picked)
            if taken and attempt + 1 < PORT_ATTEMPTS:  # only a port picked here is worth another pick
                continue
            raise
        except BaseException:  # Ctrl-C or SIGTERM while it starts: never leave it behind
            target.stop()
            raise
    raise AssertionError("unreachable")


def wait_ready(target: TargetProcess, timeout_s: float) -> None:
    """Until ``GET /healthz`` answers 200 and, for a target with an admin listener of its own, that
    listener answers too (a node of several processes opens it once every process serves:
    targets/multiprocess.py); a TargetError with its stderr if it exits or times out."""
    deadline = time.monotonic() + timeout_s
    checks = [f"{target.url}/healthz"]
    if target.admin_port != target.port:
        checks.append(f"{target.admin_url}/_bench/counters")
    with httpx.Client(timeout=1.0) as client:
        while time.monotonic() < deadline:
            if target.process.poll() is not None:
                raise TargetError(f"target exited with {target.process.returncode}: {target.stderr().strip()}")
            try:
                if all(client.get(url).status_code == 200 for url in checks):
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
    raise TargetError(f"target on port {target.port} not ready after {timeout_s:.0f} s: {target.stderr().strip()}")


@contextmanager
def running_target(args: Sequence[str], *, log_dir: Path, **kwargs) -> Iterator[TargetProcess]:
    """A started target, stopped (with its whole process group) when the block exits."""
    target = start_target(args, log_dir=log_dir, **kwargs)
    try:
        yield target
    finally:
        target.stop()
