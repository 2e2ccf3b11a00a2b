"""One Locust worker's share of an open-loop plan, built ready to send: its requests encoded, its
groups' deadlines on the worker's clock, each request's intended time, names and source address.

Locust-free, so it is tested exactly; the worker builds it off its event loop (``off_loop``). A
share of a large plan takes seconds to build (about 4 us a request of the plan here): built on
the gevent loop, it starved Locust's heartbeat greenlet, the master marked the worker missing
after its liveness (3 s) and dealt its user to the workers still ready, which then replayed
their share twice (840,000 sent of 630,000 planned) or stopped the test (4,530 of 300,000).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import gevent
import numpy as np

from .live_plan import LivePlan, Release, releases, worker_share
from .raw_replay import Wire, wires

T = TypeVar("T")


@dataclass(frozen=True)
class Share:
    """What ``PlanUser`` replays, by index in the share."""

    ids: list[str]
    methods: list[str]
    names: list[str]
    intended: np.ndarray
    """Each request's intended send time on the plan's (the master's) clock."""
    batches: list[Release]
    """The groups, their deadlines on this worker's clock (shifted by ``shift_s``)."""
    requests: list[Wire]
    sources: np.ndarray
    """Each request's source address (object array: None where the kernel chooses)."""


def build_share(plan: LivePlan, worker: int, shift_s: float = 0.0) -> Share:
    """Worker ``worker``'s share of ``plan`` (``live_plan.worker_share``), every request encoded
    (``raw_replay.wires``), its deadlines shifted by ``shift_s`` onto this worker's clock."""
    shots = worker_share(plan.arrivals(), worker, plan.workers, plan.key_prefix)
    urls = plan.host_urls()  # by arrival index: the plan's routing over its hosts
    sources = plan.addresses()  # by arrival index: each client's own address, or the model's shared one
    intended = np.zeros(len(shots))
    planned = releases(shots, plan.start_at, plan.burst_gap_s)
    for release in planned:
        intended[release.requests.start:release.requests.stop] = release.deadline
    requests = wires([(s.method, s.path, s.headers) for s in shots], [urls[s.index] for s in shots],
                     [sources[s.index] for s in shots])
    return Share(ids=[s.headers["x-request-id"] for s in shots], methods=[s.method for s in shots],
                 names=[f"{s.method} {s.path}" for s in shots], intended=intended,
                 batches=[r._replace(deadline=r.deadline + shift_s) for r in planned], requests=requests,
                 sources=np.asarray([w.origin.source for w in requests], dtype=object))


def off_loop(work: Callable[..., T], *args: object) -> T:
    """``work(*args)`` on a thread of gevent's pool, the calling greenlet waiting: the event loop
    (Locust's heartbeats, its stats, the master's messages) runs meanwhile, each time the
    interpreter hands the GIL over (every 5 ms of a busy thread)."""
    return gevent.get_hub().threadpool.apply(work, args)
