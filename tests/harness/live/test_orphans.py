"""Children die with their parent: a real ``run_bench.py run`` (a node of two server processes on
the runner's own redis-server, two Locust workers, an nginx peer) SIGKILLed at five moments of
its campaign drawn from a seeded RNG; every process it had started (its tree recorded just before
the kill, and any process naming the results folder) is gone within 10 s, and no port that tree
listened on is still listening."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import yaml

from tests.poll import until

ROOT = Path(__file__).resolve().parents[3]
CAMPAIGN = {
    "name": "orphans", "seed": 1, "policy": {"limit": 20, "window_s": 1}, "algorithms": ["fixed_window"],
    "stores": ["redis-shared"], "processes": 2, "peers": ["nginx"],
    "scenarios": [{"name": "boundary_burst", "params": {"instant": 1, "boundaries": 1, "delta_s": 0.3}}],
    "scale": {"workers": 2, "lead_s": 2.0, "drain_s": 1.0},
    "downstream": {"concurrency": 8, "median_ms": 10, "sigma": 0.3},
}
MOMENTS = 5
SPAN_S = (0.5, 14.0)
"""When the kills land, in seconds after the start: from the runner's imports to its last run."""
GONE_WITHIN_S = 10.0


def _moments(seed: int = 41) -> list[float]:
    """One moment in each fifth of the span, drawn from a seeded RNG: spread over the run."""
    rng, width = random.Random(seed), (SPAN_S[1] - SPAN_S[0]) / MOMENTS
    return [round(SPAN_S[0] + (i + rng.random()) * width, 2) for i in range(MOMENTS)]

pytestmark = [pytest.mark.process,  # a live campaign, its children, and their kill
              pytest.mark.skipif(not (shutil.which("redis-server") and shutil.which("nginx"))
                                 and os.environ.get("CI", "").lower() != "true",  # CI: missing is a failure
                                 reason="needs redis-server and nginx")]


def _alive(p: psutil.Process) -> bool:
    """Running and not a zombie (an orphan's zombie waits for a reaper, and holds no port)."""
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _tree(pid: int) -> tuple[list[psutil.Process], set[int]]:
    """Every descendant of ``pid`` and the ports they listen on."""
    tree, ports = [], set()
    for p in psutil.Process(pid).children(recursive=True):
        try:
            ports |= {c.laddr.port for c in p.net_connections("inet") if c.status == psutil.CONN_LISTEN}
            tree.append(p)
        except psutil.Error:
            pass
    return tree, ports


def _left(tree: list[psutil.Process], ports: set[int], marker: str) -> list[str]:
    """What is still there: a recorded process, a process naming ``marker``, a recorded port listening."""
    left = [f"{p.pid} {p.info['name']}" for p in psutil.process_iter(["name", "cmdline"])
            if marker in " ".join(p.info["cmdline"] or ()) and _alive(p)]
    left += [f"{p.pid} recorded: {' '.join(p.cmdline()[:6])}" for p in tree if _alive(p)]
    left += [f"port {c.laddr.port}" for c in psutil.net_connections("inet")
             if c.status == psutil.CONN_LISTEN and c.laddr.port in ports]
    return left


@pytest.mark.parametrize("moment", _moments())
def test_sigkill_of_the_runner_leaves_no_process_and_no_port(tmp_path, moment):
    path, out = tmp_path / "orphans.yaml", tmp_path / "res"
    path.write_text(yaml.safe_dump(CAMPAIGN))
    runner = subprocess.Popen([sys.executable, "run_bench.py", "run", str(path), "--out", str(out)], cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(moment)
    tree, ports = _tree(runner.pid)
    runner.send_signal(signal.SIGKILL)
    runner.wait()
    until(lambda: not _left(tree, ports, str(tmp_path)), GONE_WITHIN_S)
    left = _left(tree, ports, str(tmp_path))
    assert not left, f"killed at {moment:.1f} s with {len(tree)} children: {left}"
