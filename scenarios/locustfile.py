"""Locust users that replay a traffic model's plan over HTTP (``locust -f scenarios/locustfile.py
--plan PLAN.json``; the harness writes the plan and starts Locust, or run it by hand).

Locust drives the load; the suite owns the timing and the statistics, because Locust's own model
does not fit (closed loop, so coordinated omission; response times rounded; no way to fire a
burst at an instant):
- one scheduler per worker walks its share of the plan; each group of near-simultaneous requests
  gets greenlets spawned ahead of time on warm connections, blocked on one event released at the
  group's deadline; nothing waits for replies (no concurrency cap), so the model stays open;
- every request is logged raw (intended, sent and done times, status) and written as Parquet when
  the test stops; percentiles are computed afterwards, exactly;
- a 429 is an expected answer, never a Locust failure.

``PlanUser`` replays open-loop models; ``ReactiveUser`` closed-loop ones (retries, a drip paced by
Retry-After): every answer goes back to the model, whose follow-ups are fired at their time.
The harness names the class the plan needs (``LivePlan.user_class``) on Locust's command line.
"""

from __future__ import annotations

import itertools
import os
import time
from pathlib import Path

import gevent
import pyarrow as pa
import pyarrow.parquet as pq
from gevent.event import Event
from gevent.pool import Group
from locust import FastHttpUser, events, task
from locust.exception import StopUser

from contract.routes import MODEL_ROUTES
from contract.schema import CLIENT_SCHEMA, LATE_SUFFIX, client_part, ready_marker
from scenarios.base import Request
from scenarios.live_plan import LivePlan, Shot, groups, outcome, request_headers, worker_share

PREPARE_AHEAD_S = 0.05
"""Greenlets of a group are spawned this long before its deadline and then wait on its event."""
LATE_S = 0.005
"""A group released this much after its deadline counts as late (the generator fell behind)."""
EXPECTED = (200, 201, 429)
RETRIED_EXPECTED = (*EXPECTED, 503)


@events.init_command_line_parser.add_listener
def _add_plan_argument(parser) -> None:
    parser.add_argument("--plan", type=str, default="", help="ratelimit-bench live plan (JSON)")


class _ClientLog:
    """Raw rows of this worker process, written once when the test stops."""

    def __init__(self) -> None:
        self.rows: dict[str, list] = {name: [] for name in CLIENT_SCHEMA.names}
        self.in_flight: dict[str, tuple] = {}
        """request id -> (intended, sent[, attempt])"""
        self.late_groups = 0
        self.path: Path | None = None

    def add(self, request_id: str, intended: float, sent: float, done: float, status: int, attempt: int = 1) -> None:
        for name, value in zip(CLIENT_SCHEMA.names, (request_id, intended, sent, done, status, attempt)):
            self.rows[name].append(value)

    def write(self) -> None:
        if self.path is None:
            return
        for request_id, (intended, sent, *attempt) in self.in_flight.items():  # cut off by the stop
            self.add(request_id, intended, sent, float("nan"), 0, *attempt)
        self.in_flight.clear()
        table = pa.Table.from_pydict(self.rows, schema=CLIENT_SCHEMA)
        tmp = self.path.with_suffix(".tmp")
        pq.write_table(table, tmp)
        os.replace(tmp, self.path)
        self.path.with_suffix(LATE_SUFFIX).write_text(str(self.late_groups))


LOG = _ClientLog()


@events.test_stop.add_listener
def _flush(environment, **_kwargs) -> None:
    LOG.write()


def _start(user: FastHttpUser) -> tuple[LivePlan, int]:
    """Load the plan, point the user at the target, open this worker's client log."""
    plan = LivePlan.load(Path(user.environment.parsed_options.plan))
    worker = max(0, getattr(user.environment.runner, "worker_index", 0))
    user.host = plan.hosts[0]
    client_dir = Path(plan.client_dir)
    client_dir.mkdir(parents=True, exist_ok=True)
    LOG.path = client_dir / client_part(worker, os.getpid())
    return plan, worker


def _warm_up(user: FastHttpUser, largest: int, client_dir: Path, worker: int) -> None:
    """Wait for the target, warm the connections a burst will use (before the first deadline),
    then say ready."""
    _wait_for_target(user)
    warm = [gevent.spawn(user.client.get, "/healthz", name="warm-up") for _ in range(min(largest, 200))]
    gevent.joinall(warm, timeout=5)
    (client_dir / ready_marker(worker)).write_text(f"{time.time():.6f}")


def _wait_for_target(user: FastHttpUser, timeout_s: float = 30.0) -> None:
    """The harness starts Locust and the target together; wait until the target answers."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        with user.client.get("/healthz", name="warm-up", catch_response=True) as response:
            if response.status_code == 200:
                return
            response.success()  # not up yet: not a failure of the target under test
        gevent.sleep(0.05)


class PlanUser(FastHttpUser):
    """One per worker: replays this worker's share of the plan."""

    concurrency = 1000  # connections per user: at least the largest burst, effectively no cap
    host = "http://127.0.0.1"

    def on_start(self) -> None:
        plan, worker = _start(self)
        self.plan = plan
        self.batches = groups(worker_share(plan.arrivals(), worker, plan.workers), plan.burst_gap_s)
        self.urls = plan.host_urls()  # by arrival index: the plan's routing over its hosts
        _warm_up(self, max((len(b) for b in self.batches), default=1), Path(plan.client_dir), worker)

    @task
    def replay(self) -> None:
        start_at = self.plan.start_at
        in_flight = Group()  # forgets finished greenlets by itself
        for batch in self.batches:
            deadline = start_at + batch[0].t
            _sleep_until(deadline - PREPARE_AHEAD_S)
            release = Event()
            for shot in batch:
                in_flight.spawn(self._fire, release, deadline, shot)
            _sleep_until(deadline)
            if time.time() - deadline > LATE_S:
                LOG.late_groups += 1
            release.set()
        in_flight.join()
        raise StopUser()

    def _fire(self, release: Event, deadline: float, shot: Shot) -> None:
        release.wait()
        request_id = shot.headers["x-request-id"]
        sent = time.time()
        LOG.in_flight[request_id] = (deadline, sent)
        with self.client.request(shot.method, self.urls[shot.index] + shot.path, headers=shot.headers,
                                 name=f"{shot.method} {shot.path}", catch_response=True) as response:
            status = response.status_code or 0
            if status in EXPECTED:
                response.success()  # a 429 is an expected outcome, not a failure
            else:
                response.failure(f"status {status}")
        LOG.in_flight.pop(request_id, None)
        LOG.add(request_id, deadline, sent, time.time(), status)


class ReactiveUser(FastHttpUser):
    """One per worker: fires its share of a closed-loop model's planned requests, and every
    follow-up the model asks for in answer to what the target said (retries keep their request
    id and count their attempt)."""

    concurrency = 1000
    host = "http://127.0.0.1"

    def on_start(self) -> None:
        plan, worker = _start(self)
        self.plan = plan
        self.model = plan.model()
        self.worker = worker
        arrivals = self.model.arrivals()
        self.initial = [(f"r{i}", r) for i, r in enumerate(arrivals.requests()) if i % plan.workers == worker]
        self.ids = itertools.count(1)
        self.in_flight = Group()
        _warm_up(self, len(self.initial), Path(plan.client_dir), worker)

    @task
    def replay(self) -> None:
        for request_id, request in self.initial:
            self.in_flight.spawn(self._fire, request, request_id)
        self.in_flight.join()  # follow-ups join the group before their cause leaves it
        raise StopUser()

    def _fire(self, request: Request, request_id: str) -> None:
        start_at = self.plan.start_at
        deadline = start_at + request.t
        _sleep_until(deadline)
        method, path = MODEL_ROUTES.get(request.route, ("GET", "/api/items"))
        sent = time.time()
        LOG.in_flight[request_id] = (deadline, sent, request.attempt)
        with self.client.request(method, path, headers=request_headers(request, request_id), name=f"{method} {path}",
                                 catch_response=True) as response:
            status = response.status_code or 0
            answer = outcome(status, {k.lower(): v for k, v in (response.headers or {}).items()})
            if status in RETRIED_EXPECTED:
                response.success()  # a refusal the model answers is an expected outcome
            else:
                response.failure(f"status {status}")
        done = time.time()
        LOG.in_flight.pop(request_id, None)
        LOG.add(request_id, deadline, sent, done, status, request.attempt)
        if answer is None:
            return
        for follow in self.model.react(request._replace(t=done - start_at), answer):
            follow_id = request_id if follow.attempt > request.attempt else f"w{self.worker}.{next(self.ids)}"
            self.in_flight.spawn(self._fire, follow, follow_id)


def _sleep_until(t: float) -> None:
    """gevent.sleep to ~2 ms before ``t``, then yield-spin: timer granularity is ~1 ms. Always
    yields at least once, so a scheduler that is behind still lets released requests run."""
    remaining = t - time.time()
    if remaining > 0.002:
        gevent.sleep(remaining - 0.002)
    gevent.sleep(0)
    while time.time() < t:
        gevent.sleep(0)
