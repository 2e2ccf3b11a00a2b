"""The processes of a live run: targets and Locust, each in its own process group, all stopped
however the run ends; SIGINT and SIGTERM become ``Interrupted`` for the duration of a campaign,
once: the first signal interrupts, later ones are noted and change nothing, and a block that
records a run (``interrupts_deferred``) finishes before any signal takes effect, so every run
ends complete or marked interrupted, with its run.json."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.processes.groups import stop_group
from harness.processes.spawn import spawn
from harness.processes.target import TargetError, TargetProcess, start_target, wait_ready

PEER_READY_S = 15.0


class Interrupted(Exception):
    """SIGINT or SIGTERM arrived during a campaign."""


class RunFailed(Exception):
    """A run that could not complete; the message carries the relevant log tail."""


@dataclass
class _Signals:
    raised: bool = False
    """``Interrupted`` was raised once: the campaign is stopping; later signals only wait for it."""
    deferring: int = 0
    pending: str | None = None
    """A signal that arrived while a run was being recorded: raised once the record is written."""


_campaign: _Signals | None = None


@contextmanager
def signals_interrupt() -> Iterator[None]:
    """SIGTERM behaves like Ctrl-C for the duration of a campaign; only the first one interrupts
    (a second Ctrl-C 0.3 s after the first used to land in the runner's clean-up and leave the run
    without its run.json)."""
    global _campaign
    state = _campaign = _Signals()

    def handler(signum: int, frame: Any) -> None:
        if state.raised or state.deferring:
            state.pending = state.pending or signal.Signals(signum).name
            return
        state.raised = True
        raise Interrupted(signal.Signals(signum).name)

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        _campaign = None


@contextmanager
def interrupts_deferred() -> Iterator[None]:
    """A block no signal breaks (stopping a run's children, writing its record): a signal that
    arrives meanwhile is raised as ``Interrupted`` when the block ends, unless one already was."""
    state = _campaign
    if state is None:
        yield
        return
    state.deferring += 1
    try:
        yield
    finally:
        state.deferring -= 1
        if not state.deferring and state.pending and not state.raised:
            state.raised = True
            raise Interrupted(state.pending)


def tail(path: Path, lines: int = 15) -> str:
    if not path.exists():
        return ""
    return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])


class Processes:
    """Every child of the runner that is alive: registered as soon as it starts, so an
    interruption meanwhile orphans none."""

    def __init__(self) -> None:
        self.children: list[subprocess.Popen] = []
        self.targets: list[TargetProcess] = []

    def start_targets(self, configs: list[Path], ports: list[int], admin_ports: list[int], logs: Path,
                      env: dict[str, str] | None, args: Sequence[str] = ()) -> list[TargetProcess]:
        """Every node in parallel (start-up is mostly imports); ``args``: the server's own flags."""
        def start(config: Path, port: int, admin_port: int) -> TargetProcess:
            target = start_target(["--config", str(config), *args], log_dir=logs, port=port, admin_port=admin_port, env=env)
            self.targets.append(target)
            return target

        with ThreadPoolExecutor(len(configs)) as pool:
            futures = [pool.submit(start, c, p, a) for c, p, a in zip(configs, ports, admin_ports)]
            started, errors = [], []
            for f in futures:
                try:
                    started.append(f.result())
                except TargetError as exc:
                    errors.append(exc)
        if errors:
            raise RunFailed(f"target did not start: {errors[0]}")
        return started

    def start_peer(self, name: str, cmd: list[str], port: int, stderr_path: Path, error_log: Path,
                   env: dict[str, str] | None = None) -> TargetProcess:
        """A peer target (harness/live/peers/) in the foreground in its own session, registered at
        once; ready when its ``/healthz`` (proxied to the downstream) answers. Its error log's
        tail names why it did not start."""
        with stderr_path.open("wb") as err:
            process = spawn(cmd, stdin=subprocess.DEVNULL, stdout=err, stderr=err, env=env)
        started = TargetProcess(process, port, stderr_path, port)
        self.targets.append(started)
        try:
            wait_ready(started, PEER_READY_S)
        except TargetError as exc:
            raise RunFailed(f"{name} did not start: {exc}\n{tail(error_log) or tail(stderr_path)}") from None
        return started

    def start(self, cmd: list[str], log: Path, cwd: Path) -> subprocess.Popen:
        """Locust, in its own session (its group is stopped as one), output to ``log``; SIGKILLed
        if this process dies (spawn.py)."""
        with log.open("wb") as out:
            process = spawn(cmd, signal.SIGKILL, stdin=subprocess.DEVNULL, stdout=out, stderr=out, cwd=cwd)
        self.children.append(process)
        return process

    def stop_target(self, target: TargetProcess) -> None:
        target.stop()
        self.targets.remove(target)

    def stop_all(self) -> None:
        for target in self.targets:
            target.stop()
        self.targets.clear()
        for child in self.children:
            stop_group(child)
        self.children.clear()


class SideLate(Exception):
    """The side under test, or the load generator, was ready only after the plan's first send."""

    def __init__(self, late_s: float, start_up_s: float, who: str = "the side under test") -> None:
        super().__init__(f"{who} was ready {late_s:.1f} s after the plan's first send "
                         f"(its start-up took {start_up_s:.1f} s)")
        self.start_up_s = start_up_s
