"""The target in virtual time: N processes, each a FIFO server that spends a fixed CPU cost on
every request it answers, admitted or refused (a 429 is work too), plus the network between the
client and the target and, on Redis, the store's round trip on each decision.

Defaults are the suite's own measurements, so a virtual run prices a request as a live one does:
- CPU per request: `run_bench.py bench targets` (docs/targets.md, 2026-11-30: psutil CPU per
  request of one uvicorn process, memory store, decision log on);
- Redis round trip: `run_bench.py bench redis`, one sync client (docs/redis.md, 2026-11-29:
  1 / decisions per second), for the store ``redis``;
- one-way network delay: half the median round trip of a TCP echo over 127.0.0.1 on the
  development machine (19 us, 2026-12-01);
- what a downstream call holds its slot beyond its service time: `run_bench.py bench
  slot-overhead` (docs/high-qps.md, 2026-12-03: a queued 8 x 10 ms downstream drains at 8 / (10 ms
  + this), live; the sleep's timer and the event loop's hops to wake the caller and hand the
  slot on).

A request goes to the process its client is dealt to (each client keeps one connection, and
SO_REUSEPORT deals connections over the processes): client i of the run, by first appearance,
to process i mod N.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pandas as pd

from targets.algorithms import get_algorithm

CPU_US = {
    "none": 99.2, "fixed_window": 106.0, "sliding_log": 108.3, "sliding_window_counter": 104.0,
    "sliding_window_ring": 107.8, "token_bucket": 106.2, "leaky_bucket": 111.0, "gcra": 106.5,
    "concurrency": 105.8, "adaptive": 118.0,
}
"""Target CPU us per request by algorithm (memory store); an algorithm not measured gets the mean."""
DEFAULT_CPU_US = round(sum(CPU_US.values()) / len(CPU_US), 1)
REDIS_DECISIONS_PER_S = {
    "fixed_window": 8640, "sliding_log": 7687, "sliding_window_counter": 7933, "sliding_window_ring": 7688,
    "token_bucket": 7831, "leaky_bucket": 8478, "gcra": 8361, "concurrency": 4222,
}
"""One sync client's Redis decisions per second by algorithm: one round trip each (concurrency: two)."""
LOOPBACK_ONE_WAY_US = 10.0
SLOT_OVERHEAD_US = 1150.0


def cpu_us_for(algorithm: str) -> float:
    return CPU_US.get(algorithm, DEFAULT_CPU_US)


def redis_round_trip_us(algorithm: str) -> float:
    """What a decision on the Redis store adds to a request's time (0 for ``none``)."""
    if not get_algorithm(algorithm).limits:
        return 0.0
    rate = REDIS_DECISIONS_PER_S.get(algorithm, min(REDIS_DECISIONS_PER_S.values()))
    return round(1e6 / rate, 1)


def processes_of(client_ids: list[str] | np.ndarray, processes: int) -> np.ndarray:
    """Each request's process: its client's order of first appearance, mod N."""
    if processes == 1:
        return np.zeros(len(client_ids), dtype=np.int64)
    codes, _ = pd.factorize(np.asarray(client_ids, dtype=object), sort=False)
    return codes % processes


def fifo_done(arrive: np.ndarray, cost_s: float) -> np.ndarray:
    """Departure times of a FIFO single server with a constant service time, for arrivals in
    time order: D_n = max(A_n, D_(n-1)) + S, solved in closed form (D_n = C_n + max over k <= n
    of A_k - C_(k-1), C the running sum of S) so numpy does it without a Python loop."""
    if not len(arrive):
        return np.asarray(arrive, dtype=np.float64)
    before = np.arange(len(arrive), dtype=np.float64) * cost_s  # C_(k-1)
    return np.maximum.accumulate(arrive - before) + before + cost_s


class TargetProcesses:
    """The sequential form of ``fifo_done`` for the event loop: ``serve(process, t) -> done``."""

    def __init__(self, processes: int, cpu_s: float) -> None:
        self.free = [0.0] * processes
        self.cpu_s = cpu_s

    def serve(self, process: int, t: float) -> float:
        free = self.free[process]
        done = (t if t > free else free) + self.cpu_s
        self.free[process] = done
        return done

    def serve_all(self, arrive: Sequence[float], process: np.ndarray) -> np.ndarray:
        """``serve`` of each request in order (``process``: each one's), as a column: the same
        running sums per process, in a C-level ``accumulate`` instead of a call per request."""
        out = np.empty(len(arrive))
        cost = self.cpu_s

        def step(free: float, t: float) -> float:
            return (t if t > free else free) + cost

        times = np.asarray(arrive, dtype=np.float64)
        for p in range(len(self.free)):
            mine = np.flatnonzero(process == p)
            done = list(itertools.accumulate(times[mine].tolist(), step, initial=self.free[p]))
            out[mine] = done[1:]
            self.free[p] = done[-1]
        return out


def cpu_samples(done: np.ndarray, process: np.ndarray, processes: int, cpu_s: float,
                sample_s: float = 1.0) -> pd.DataFrame:
    """cpu.csv's rows (contract.schema.CPU_COLUMNS) for the target processes: per process, one
    sample per ``sample_s`` of model time, its busy share of that span (each request's CPU
    counted in the span it ends in), and a first sample of 0 at the run's start, as psutil's."""
    start = float(np.floor(done.min() - cpu_s)) if len(done) else 0.0
    spans = int(np.floor((done.max() - start) / sample_s)) + 1 if len(done) else 1
    frames = []
    for p in range(processes):
        mine = done[process == p]
        busy = np.bincount(((mine - start) // sample_s).astype(np.int64), minlength=spans) * cpu_s
        t = start + np.arange(spans + 1) * sample_s
        percent = np.concatenate([[0.0], np.minimum(100.0, busy / sample_s * 100.0)])
        frames.append(pd.DataFrame({"t": t, "process": f"target:sim-{p}", "role": "target",
                                    "cpu_percent": percent.round(3), "rss_bytes": 0}))
    return pd.concat(frames, ignore_index=True)
