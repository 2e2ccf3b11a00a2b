"""A worker's share of an open-loop plan (``scenarios.share``): exactly the plan's every n-th
request, ready to send; and built off the event loop, so Locust's heartbeats go on meanwhile."""

from __future__ import annotations

import gevent

from scenarios.live_plan import LivePlan, worker_share
from scenarios.share import build_share, off_loop

RAMP = {"start_rps": 1000, "end_rps": 3000, "duration_s": 4, "clients": 40}


def _plan(workers: int, params: dict | None = None, start_at: float = 1000.0) -> LivePlan:
    return LivePlan("ramp", 100, 1, 1, start_at, ["http://127.0.0.1:9"], "/tmp/unused", workers, params or RAMP)


def test_the_shares_of_three_workers_are_the_plan_once_each_with_their_deadlines():
    plan = _plan(3)
    shares = [build_share(plan, w, shift_s=0.5 * w) for w in range(3)]
    ids = [i for share in shares for i in share.ids]
    assert sorted(ids) == sorted(f"r{i}" for i in range(len(plan.arrivals())))
    for w, share in enumerate(shares):
        assert share.ids == [s.headers["x-request-id"] for s in worker_share(plan.arrivals(), w, 3)]
        t = plan.arrivals().t
        assert share.ids[:3] == [f"r{w}", f"r{w + 3}", f"r{w + 6}"]
        first = share.batches[0]
        assert first.deadline == 1000.0 + t[w] + 0.5 * w  # on this worker's clock
        assert share.intended[0] == 1000.0 + t[w]  # on the plan's
        assert len(share.requests) == len(share.ids) == len(share.sources)
        assert sum(len(b.requests) for b in share.batches) == len(share.ids)


def test_the_event_loop_runs_while_a_large_share_is_built_off_it():
    """60,000 planned requests take a fraction of a second or more to build: built inline, no other
    greenlet runs meanwhile (the negative control); off the loop, one does."""
    plan = _plan(1, {**RAMP, "start_rps": 10000, "end_rps": 20000, "clients": 400})
    ticks: list[int] = []

    def tick() -> None:
        while True:
            ticks.append(1)
            gevent.sleep(0.001)

    ticker = gevent.spawn(tick)
    gevent.sleep(0.01)
    ticks.clear()
    build_share(plan, 0)
    inline = len(ticks)
    share = off_loop(build_share, _plan(1, {**RAMP, "start_rps": 10000, "end_rps": 20000, "clients": 400}), 0)
    ticker.kill()
    assert inline == 0
    assert len(ticks) > 0
    assert len(share.ids) == len(plan.arrivals()) == 60_000
