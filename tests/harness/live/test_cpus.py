"""``scale.pin``: the cores are split between the targets and the generator (exactly, by hand),
every thread of a real process tree is moved, and a live run pins its Locust and its target's
processes (a 2-process node) and says so in run.json."""

from __future__ import annotations

import os
import subprocess
import sys

import psutil
import pytest

from harness.campaign.live import Campaign
from harness.live import cpus, runner
from harness.live.cpus import CpuSplit
from harness.live.plan import plan_runs
from harness.live.runner import LiveRunner

TWO_CORES = pytest.mark.skipif(len(cpus.available()) < 2, reason="pinning needs 2 cores this process may use")


def test_the_targets_get_the_first_half_rounded_up():
    assert cpus.split([0, 1]) == CpuSplit((0,), (1,))
    assert cpus.split([3, 1, 2]) == CpuSplit((1, 2), (3,))
    assert cpus.split(range(16)) == CpuSplit(tuple(range(8)), tuple(range(8, 16)))
    assert cpus.split([0]) is None and cpus.split([]) is None


@TWO_CORES
@pytest.mark.process
def test_every_thread_of_a_process_and_its_children_is_pinned():
    code = ("import subprocess, sys, threading, time; threading.Thread(target=time.sleep, args=(30,), daemon=True).start();"
            "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)']); print('up', flush=True); time.sleep(30)")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "up"
        cpus.pin(proc.pid, [1])
        family = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
        threads = [t.id for p in family for t in p.threads()]
        assert len(family) == 2 and len(threads) == 3
        assert all(os.sched_getaffinity(tid) == {1} for tid in threads)
    finally:
        for p in psutil.Process(proc.pid).children(recursive=True):
            p.kill()
        proc.kill()
        proc.wait()


@TWO_CORES
@pytest.mark.process
def test_a_pinned_run_puts_each_side_on_its_cores(tmp_path, monkeypatch):
    pinned: list[tuple[tuple[int, ...], int, set[int]]] = []
    """(cores asked, processes in the tree, the cores every thread of the tree may now use)"""
    real_pin = cpus.pin

    def recording_pin(pid, cores):
        real_pin(pid, cores)
        family = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
        pinned.append((tuple(cores), len(family), {c for p in family for t in p.threads() for c in os.sched_getaffinity(t.id)}))

    monkeypatch.setattr(runner.cpus, "pin", recording_pin)
    campaign = Campaign.model_validate({
        "name": "pin", "policy": {"limit": 5, "window_s": 1}, "algorithms": ["fixed_window"], "processes": 2,
        "scenarios": [{"name": "steady", "params": {"clients": 10, "load": 1.0, "duration_s": 1}}],
        "scale": {"lead_s": 2.5, "drain_s": 0.5, "pin": True}, "downstream": {"median_ms": 0},
    })
    live = LiveRunner(campaign, tmp_path)
    try:
        info = live.execute(plan_runs(campaign)[0])
    finally:
        live.close()
    assert info["status"] == "ok", info.get("error")
    generator, target = cpus.split(cpus.available()).generator, cpus.split(cpus.available()).targets
    assert info["cpus"] == {"targets": list(target), "generator": list(generator)}
    # Locust first, then the node, in the run's last attempt (a busy machine retries a run whose side started late)
    (gen_cores, _, gen_seen), (target_cores, target_procs, target_seen) = pinned[-2:]
    assert (gen_cores, gen_seen) == (generator, set(generator))
    assert (target_cores, target_seen) == (target, set(target)) and target_procs >= 2  # both of the node's processes
