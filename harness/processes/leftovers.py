"""What a killed process leaves behind: every descendant recorded just before the kill, any
process naming a marker (its results folder), and every port the tree listened on still
listening. One way for the test that SIGKILLs a live run (tests/harness/live/test_orphans.py)
and the benchmark that times how soon nothing is left (``run_bench.py bench orphans``)."""

from __future__ import annotations

import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

POLL_S = 0.02
"""How often what is left is read after the kill: the benchmark's resolution."""


def alive(p: psutil.Process) -> bool:
    """Running and not a zombie (an orphan's zombie waits for a reaper, and holds no port)."""
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def command(p: psutil.Process) -> str | None:
    """Its command line's start; None when it ended (or became a zombie) since it was seen alive:
    a process dying while it is read is the race this watch exists for (CI caught one)."""
    try:
        return " ".join(p.cmdline()[:6])
    except psutil.Error:
        return None


def tree_of(pid: int) -> tuple[list[psutil.Process], set[int]]:
    """Every descendant of ``pid`` and the ports they listen on."""
    tree, ports = [], set()
    for p in psutil.Process(pid).children(recursive=True):
        try:
            ports |= {c.laddr.port for c in p.net_connections("inet") if c.status == psutil.CONN_LISTEN}
            tree.append(p)
        except psutil.Error:
            pass
    return tree, ports


def left_behind(tree: list[psutil.Process], ports: set[int], marker: str) -> list[str]:
    """What is still there: a recorded process, a process naming ``marker``, a recorded port listening."""
    left = [f"{p.pid} {p.info['name']}" for p in psutil.process_iter(["name", "cmdline"])
            if marker in " ".join(p.info["cmdline"] or ()) and alive(p)]
    left += [f"{p.pid} recorded: {described}" for p in tree if alive(p) and (described := command(p)) is not None]
    left += [f"port {c.laddr.port}" for c in psutil.net_connections("inet")
             if c.status == psutil.CONN_LISTEN and c.laddr.port in ports]
    return left


@dataclass(frozen=True)
class Killed:
    """One SIGKILL and what followed it."""

    at_s: float
    children: int
    ports: int
    gone_after_s: float | None
    """Seconds from the kill until nothing was left; None: something was still there at the end."""
    left: list[str]
    """What was still there when the watch ended (empty when everything went)."""


def kill_and_watch(command: list[str], cwd: Path, at_s: float, marker: str, within_s: float) -> Killed:
    """Start ``command``, SIGKILL it ``at_s`` seconds later, and watch for ``within_s`` seconds
    until nothing it had started is left (``left_behind``)."""
    runner = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(at_s)
    tree, ports = tree_of(runner.pid)
    runner.send_signal(signal.SIGKILL)
    runner.wait()
    killed, deadline = time.monotonic(), time.monotonic() + within_s
    while (left := left_behind(tree, ports, marker)) and time.monotonic() < deadline:
        time.sleep(POLL_S)
    return Killed(at_s, len(tree), len(ports), None if left else time.monotonic() - killed, left)
