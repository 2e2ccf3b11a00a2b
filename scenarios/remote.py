"""Workers on other machines, over Locust's own master/worker connection (custom messages).

A remote worker has no access to the master's filesystem, so everything a local worker reads or
writes in the run folder travels over the Locust connection instead:

- the plan: the worker asks (``rlb_plan_request``) and the master answers with plan.json's text
  and the worker's index as soon as the harness has written it (it waits for every worker first);
- the clock: the worker pings the master (NTP style: offset = midpoint of the round trip minus the
  master's stamp, bounded by half the round trip, best of ``PINGS``) and shifts its deadlines
  onto the master's clock; every time it logs is converted back, so the client log is on one clock;
- the ready marker and the raw client log part (Parquet bytes, in ``CHUNK_BYTES`` chunks): the
  master writes them into the run's handshake folder, where ``harness.live.logs`` finds them
  exactly as it finds local workers' files;
- the end: before Locust's own ``quit``, the master asks the workers to stop (``rlb_stop``: they
  stop their users and send their logs; not Locust's ``stop``, after which a worker sleeps its
  stop timeout without reading messages), waits for every log and says whether the campaign is
  over (the worker's exit code); a worker never serves two runs.

The master half is active only with ``--remote-dir`` (set by the harness for remote runs); the
worker half only with ``--plan-from-master``: local forked workers are untouched. This module is
the protocol's facts (Locust-free: the harness reads them); ``remote_sides`` its two halves.
"""

from __future__ import annotations

from dataclasses import dataclass

PLAN_REQUEST, PLAN, PING, PONG, READY, STOP, LOG, END = (
    f"rlb_{name}" for name in ("plan_request", "plan", "ping", "pong", "ready", "stop", "log", "end"))
CHUNK_BYTES = 256 * 1024
"""A message this large at most: Locust's connection carries heartbeats and stats meanwhile."""
PINGS = 16
CLOCK_BOUND_S = 0.001
"""A worker whose offset cannot be bounded below this is flagged (run.json, the run's line)."""
PLAN_WAIT_S = 120.0
LOG_WAIT_S = 20.0
"""How long the master waits for the workers' logs after the stop (the harness's own stop
timeout is longer, so a missing log is reported by name rather than by a kill)."""
QUIT_GRACE_S = 5.0
"""A worker told the run is over quits by itself this long after, if Locust's own quit was lost
(a master that exits drops the messages its workers have not read yet)."""
CAMPAIGN_OVER_EXIT = 10
"""A remote Locust worker exits with this when the master said the campaign is over."""
JOINED_FILE = "joined"
"""Written in the remote worker's own working directory when a master gave it a plan."""


@dataclass(frozen=True)
class Clock:
    """A worker's clock against the master's."""

    offset_s: float
    """Worker clock minus master clock: a master instant T is T + offset on the worker."""
    bound_s: float
    """The offset is exact within this (half the best round trip)."""
    pings: int

    @property
    def bounded(self) -> bool:
        return self.bound_s < CLOCK_BOUND_S


def best_clock(samples: list[tuple[float, float, float]]) -> Clock:
    """From pings ``(sent on the worker, stamped by the master, received on the worker)``: the one
    with the shortest round trip, whose midpoint is closest to the master's stamp (NTP)."""
    t0, t1, t2 = min(samples, key=lambda s: s[2] - s[0])
    return Clock((t0 + t2) / 2 - t1, (t2 - t0) / 2, len(samples))
