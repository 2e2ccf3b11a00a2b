"""The load generator's two moments a run depends on, watched from the handshake folder: every
Locust worker ready before the plan's first send, and (an open-loop plan, local workers) every
worker past its last send before the run stops Locust."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from contract.schema import READY_GLOB, SENT_GLOB

from .logs import slowest_ready
from .supervise import RunFailed, SideLate

READY_WAIT_S = 120.0
"""How long past the plan's first send the runner waits for a late worker to say ready, to learn
its start-up before starting again (a worker building its share of millions of requests)."""
SENT_GRACE_S = 30.0
"""How long past the plan's end (its last send and the drain) a worker behind its plan may take to
send the rest: its late sends are counted late, bin by bin; past the grace, what it had not sent
is missing and the run fails (``logs.plan_not_kept``)."""


class GeneratorWatch:
    """Whether every worker said ready (built its share, warmed its connections) before the plan's
    first send: a worker that did not would send the plan's first seconds late, a stall the ramp
    would read as a ceiling. Then SideLate, once the last one is ready (its start-up measured),
    and the run starts again with a lead that covers it. And, for ``sends_marked`` plans, the
    workers' last sends awaited before the stop."""

    def __init__(self, handshake: Path, workers: int, launched: float, first_send_at: float, sends_marked: bool,
                 locust: subprocess.Popen) -> None:
        self.handshake, self.workers, self.launched, self.first_send_at = handshake, workers, launched, first_send_at
        self.sends_marked, self.locust = sends_marked, locust
        self.checked = False

    def check(self) -> None:
        """Once, at the plan's first send: SideLate if a worker is not ready yet."""
        if self.checked or time.time() < self.first_send_at:
            return
        self.checked = True
        if self._count(READY_GLOB) >= self.workers:
            return
        deadline = self.first_send_at + READY_WAIT_S
        while self._count(READY_GLOB) < self.workers and time.time() < deadline and self.locust.poll() is None:
            time.sleep(0.1)
        if self._count(READY_GLOB) < self.workers:  # never ready: a start-up that failed, not a late one
            raise RunFailed(f"{self.workers - self._count(READY_GLOB)} of {self.workers} Locust workers never said ready "
                            f"(their side did not answer, or they stopped): see logs/locust.log")
        ready = slowest_ready(self.handshake) or time.time()
        raise SideLate(ready - self.first_send_at, ready - self.launched, "the load generator")

    def await_sent(self) -> None:
        """Until every worker has sent its last request, at most SENT_GRACE_S."""
        deadline = time.time() + SENT_GRACE_S
        while (self.sends_marked and self._count(SENT_GLOB) < self.workers and time.time() < deadline
               and self.locust.poll() is None):
            time.sleep(0.1)

    def _count(self, pattern: str) -> int:
        return len(list(self.handshake.glob(pattern))) if self.handshake.is_dir() else 0
