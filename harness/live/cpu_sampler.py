"""CPU and memory samples of every process of a live run (psutil), in a background thread.

Both sides are sampled: the targets and the load generator. On 2 cores they compete, and a run
where the generator saturated its core measured the generator, not the target; the samples are
how the report can tell (cpu.csv, schema in contract.schema)."""

from __future__ import annotations

import threading
import time

import psutil

from contract.schema import CPU_COLUMNS, ROLE_GENERATOR, ROLE_TARGET


class CpuSampler:
    def __init__(self, interval_s: float = 0.5) -> None:
        self.interval_s = interval_s
        self.rows: list[tuple] = []
        self._watched: dict[int, tuple[str, str, psutil.Process]] = {}
        self._roots: list[tuple[str, str, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="cpu-sampler", daemon=True)

    def watch(self, name: str, role: str, pid: int) -> None:
        """Sample ``pid`` and, as they appear, its children (Locust's forked workers)."""
        assert role in (ROLE_TARGET, ROLE_GENERATOR)
        self._roots.append((name, role, pid))

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> list[tuple]:
        """Stop sampling (also fine if it never started); the rows so far."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        return self.rows

    def _discover(self) -> None:
        for name, role, pid in self._roots:
            try:
                root = psutil.Process(pid)
                family = [root, *root.children(recursive=True)]
            except psutil.Error:
                continue
            for i, proc in enumerate(family):
                if proc.pid not in self._watched:
                    label = name if i == 0 else f"{name}/{proc.pid}"
                    proc.cpu_percent(None)  # the first call only primes the counter
                    self._watched[proc.pid] = (label, role, proc)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._discover()
            now = time.time()
            for pid, (label, role, proc) in list(self._watched.items()):
                try:
                    with proc.oneshot():
                        self.rows.append((now, label, role, proc.cpu_percent(None), proc.memory_info().rss))
                except psutil.Error:
                    del self._watched[pid]


def cpu_csv(rows: list[tuple]) -> str:
    lines = [",".join(CPU_COLUMNS)]
    lines += [f"{t:.3f},{label},{role},{cpu:.1f},{rss}" for t, label, role, cpu, rss in rows]
    return "\n".join(lines) + "\n"
