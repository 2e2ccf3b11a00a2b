"""``scale: {auto: true}``: a live campaign's processes, Locust workers and connection cap sized
from the machine, the measured cost of a request on each side and the plan's peak offered rate.

Pure: the runner's command line gives it the cores and the campaign, and prints what it chose
(``ScaleChoice.said``), which campaign.yaml keeps. The costs are the suite's own measurements
(docs/high-qps.md, "Live on 16 cores"): the target's CPU per request by algorithm (``bench
targets``, the simulator's default), the generator's (the raw replay engine at 50,000-59,000/s on
16 cores, 4 workers: 43-45 us a request; 6 workers paid 60 us, each worker's own loop on top).

The rules, each a measured limit on 16 cores: a Locust worker keeps its deadlines up to about 0.7
of a core (4 workers at 0.55-0.67 sent 975,000 requests with no late second); one target process
keeps P99 flat up to about 0.7 of a core (11 processes at 0.69 held 34-44 ms to 59,000/s; 9 at
0.81 broke past 100 ms at 42,600/s); every process gets a core of its own, and the master one
more. When the plan's peak needs more cores than the machine has, the split of the cores whose
lower side holds the highest rate is chosen, and the choice says at what rate the machine runs out.
"""

from __future__ import annotations

import math
import resource
from dataclasses import asdict, dataclass, replace

import numpy as np

from harness.campaign.live import Campaign
from harness.sim.target_model import cpu_us_for
from targets.connection_caps import FD_MARGIN, MAX_CONNECTIONS

GENERATOR_US = 45.0
"""The generator's CPU per request sent (the raw replay engine, its reply reading included)."""
WORKER_CORE = 0.7
"""The share of a core one Locust worker may use and keep its deadlines."""
PROCESS_CORE = 0.7
"""The share of a core one target process may use and keep its P99 flat."""
HOLD_S = 1.0
"""A connection cap for this long of the peak rate in flight over the node: requests queued a
second or more are past every P99 bound already, and a cap well below it would answer 503 to
requests a queue would still have served."""


@dataclass(frozen=True)
class ScaleChoice:
    cores: int
    peak_rps: float
    target_us: float
    """The dearest algorithm's target CPU per request: every run of the campaign gets the same scale."""
    generator_cores: float
    target_cores: float
    workers: int
    processes: int
    max_connections: int
    fits: bool
    """Whether the peak fits the rules above on this machine."""

    def said(self) -> str:
        """What was chosen and why, in one paragraph."""
        per_worker = self.generator_cores / self.workers
        per_process = self.target_cores / self.processes
        line = (f"scale auto: {self.cores} cores; the plan peaks at {self.peak_rps:,.0f} requests/s offered: the generator "
                f"needs {self.generator_cores:.1f} cores ({GENERATOR_US:g} us a request), the target "
                f"{self.target_cores:.1f} ({self.target_us:g} us): {_count(self.workers, 'Locust worker')} ({per_worker:.2f} "
                f"of a core each at the peak), {_count(self.processes, 'target process', 'es')} ({per_process:.2f} each), "
                f"{self.max_connections:,} connections a process")
        if not self.fits:
            line += (f"; more than this machine has: past about {self.capacity_rps():,.0f}/s the machine, not the "
                     "limiter, sets the ceiling")
        return line

    def capacity_rps(self) -> float:
        """The offered rate at which the chosen processes and workers reach their rules' limits."""
        target = self.processes * PROCESS_CORE / (self.target_us * 1e-6)
        generator = self.workers * WORKER_CORE / (GENERATOR_US * 1e-6)
        return min(target, generator)

    def as_json(self) -> dict[str, object]:
        return {**asdict(self), "capacity_rps": round(self.capacity_rps(), 1)}


def _count(n: int, noun: str, plural: str = "s") -> str:
    return f"{n} {noun}{plural if n != 1 else ''}"


def choose(cores: int, peak_rps: float, target_us: float, fd_limit: int | None = None) -> ScaleChoice:
    """Workers and processes for ``peak_rps`` on ``cores`` (see the module's rules): what the peak
    needs when it fits, else the split of the cores whose lower side holds the highest rate."""
    generator_cores = peak_rps * GENERATOR_US * 1e-6
    target_cores = peak_rps * target_us * 1e-6
    workers = max(1, math.ceil(generator_cores / WORKER_CORE - 1e-9))
    processes = max(1, math.ceil(target_cores / PROCESS_CORE - 1e-9))
    fits = workers + processes + (1 if workers > 1 else 0) <= cores  # the master, with more than one worker
    if not fits:
        splits = [(w, max(1, cores - w - (1 if w > 1 else 0))) for w in range(1, max(2, cores))]
        workers, processes = max(splits, key=lambda wp: (min(wp[0] * WORKER_CORE / GENERATOR_US,
                                                             wp[1] * PROCESS_CORE / target_us), wp[1]))
    cap = max(MAX_CONNECTIONS, math.ceil(peak_rps * HOLD_S / processes))
    if fd_limit is not None:
        cap = max(16, min(cap, fd_limit - FD_MARGIN))
    return ScaleChoice(cores, round(float(peak_rps), 1), target_us, round(generator_cores, 3), round(target_cores, 3),
                       workers, processes, cap, fits)


def peak_rps(campaign: Campaign) -> float:
    """The most requests any 1 s of any entry's plan offers."""
    peak = 0.0
    for entry in campaign.scenarios:
        t = np.asarray(campaign.model_for(entry).arrivals().t, dtype=np.float64)
        if len(t):
            peak = max(peak, float(np.bincount(np.floor(t - t[0]).astype(np.int64)).max()))
    return peak


def apply(campaign: Campaign, cores: int) -> tuple[Campaign, ScaleChoice]:
    """The campaign with ``scale.auto``'s choice in it: its processes (an entry's own stays), its
    workers and its targets' connection cap (a value the file gives stays)."""
    target_us = max(cpu_us_for(a) for entry in campaign.scenarios for a in campaign.algorithms_for(entry))
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]  # a target raises its soft limit to hold its cap
    choice = choose(cores, peak_rps(campaign), target_us, None if hard == resource.RLIM_INFINITY else hard)
    given, scale = campaign.scale.model_fields_set, campaign.scale
    choice = replace(choice, workers=scale.workers if "workers" in given else choice.workers,
                     max_connections=scale.max_connections if "max_connections" in given else choice.max_connections,
                     processes=campaign.processes if "processes" in campaign.model_fields_set else choice.processes)
    scale = scale.model_copy(update={"workers": choice.workers, "max_connections": choice.max_connections})
    return campaign.model_copy(update={"scale": scale, "processes": choice.processes}), choice
