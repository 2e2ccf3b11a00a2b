"""Disjoint cores for the two sides of a live run (``scale.pin``), or none.

On a small machine the load generator and the targets compete for the same cores, and the
scheduler makes it worse than sharing them: the target that the generator's first packet wakes
is queued on the generator's own core (the waker's, for cache warmth) and waits there until the
generator is preempted. Measured on 2 cores, a 1,000-request burst reached the target 3.5 ms
after its deadline, while the generator wrote it, and the median burst landed over 62 ms;
pinned, the first request arrived 0.2-0.3 ms after the deadline and the median burst landed
over 25 ms (docs/campaigns.md, the live benchmark). Pinned, each side has its own cores (one
each on 2): run.json's ``cpus`` says which.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from dataclasses import dataclass

import psutil


@dataclass(frozen=True)
class CpuSplit:
    targets: tuple[int, ...]
    """Targets, peers and their downstreams."""
    generator: tuple[int, ...]
    """Locust and its workers (the master of remote workers too)."""

    def as_json(self) -> dict[str, list[int]]:
        return {"targets": list(self.targets), "generator": list(self.generator)}


def split(cpus: Sequence[int]) -> CpuSplit | None:
    """The first half of ``cpus`` (rounded up) for the targets, the rest for the generator;
    None with fewer than 2 (nothing to split)."""
    cpus = sorted(cpus)
    if len(cpus) < 2:
        return None
    half = (len(cpus) + 1) // 2
    return CpuSplit(tuple(cpus[:half]), tuple(cpus[half:]))


def available() -> list[int]:
    """The cores this process may run on (a container or taskset may allow fewer than exist)."""
    return sorted(os.sched_getaffinity(0))


def pin(pid: int, cpus: Sequence[int]) -> None:
    """Every thread of ``pid`` and of its children so far on ``cpus`` (affinity is per thread:
    a target's decision-log thread already runs); threads and children started later inherit
    it. A process that has already exited is skipped (its run fails on its own terms)."""
    try:
        root = psutil.Process(pid)
        family = [root, *root.children(recursive=True)]
    except psutil.Error:
        return
    for proc in family:
        with contextlib.suppress(psutil.Error, OSError):
            for thread in proc.threads():
                os.sched_setaffinity(thread.id, cpus)
