"""Locust users that replay a traffic model's plan over HTTP (``locust -f scenarios/locustfile.py
--plan PLAN.json``; the harness writes the plan and starts Locust, or run it by hand).

Locust drives the load; the suite owns the timing and the statistics, because Locust's own model
does not fit (closed loop, so coordinated omission; response times rounded; no way to fire a
burst at an instant):
- one scheduler per worker walks its share of the plan; ``PlanUser`` writes each group of
  near-simultaneous requests back to back at the group's deadline on warm connections (the raw
  replay engine, ``scenarios.raw_replay``); nothing waits for replies (no concurrency cap), so
  the model stays open;
- every request is logged raw (intended, sent and done times, status) and written as Parquet when
  the test stops; percentiles are computed afterwards, exactly;
- a 429 is an expected answer, never a Locust failure.

``PlanUser`` replays open-loop models; ``ReactiveUser`` closed-loop ones (retries, a drip paced by
Retry-After): every answer goes back to the model, whose follow-ups are fired at their time.
The harness names the class the plan needs (``LivePlan.user_class``) on Locust's command line.

Workers on other machines (``--plan-from-master``) get the plan, their clock offset and their
index over the Locust connection and send their client log back the same way
(``scenarios.remote``); their deadlines are the master's shifted by the offset.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import gevent
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from gevent.pool import Group
from locust import FastHttpUser, User, events, runners, task
from locust import stats as locust_stats
from locust.exception import CatchResponseError, StopUser
from locust.runners import LocalRunner, MasterRunner, WorkerRunner

from contract.atomic import write_text
from contract.lifetime import die_with_parent
from contract.limit_headers import limit_lines
from contract.routes import model_route
from contract.schema import (
    CLIENT_SCHEMA,
    LATE_S,
    LATE_SUFFIX,
    LIVE_LATE_SUFFIX,
    ROLE_PLAN,
    ROLE_WARM_UP,
    client_part,
    ready_marker,
    sent_marker,
)
from scenarios.addresses import WARM_UP_ADDRESS
from scenarios.base import Request
from scenarios.bound_http import BoundSessions
from scenarios.live_plan import LivePlan, follow_up_id, outcome, request_headers
from scenarios.raw_replay import Origin, RawReplay, Wire, connections_needed
from scenarios.remote_sides import MasterSide, WorkerSide
from scenarios.share import build_share, off_loop

WARM_LATENCY_S = 0.02
"""Warm connections for this long of the offered rate in flight, beyond the largest group."""
WARM_SPARE = 8
EXPECTED = (200, 201, 429)
RETRIED_EXPECTED = (*EXPECTED, 503)


@events.init_command_line_parser.add_listener
def _add_plan_argument(parser) -> None:
    parser.add_argument("--plan", type=str, default="", help="ratelimit-bench live plan (JSON)")
    parser.add_argument("--remote-dir", type=str, default="", help="master: where remote workers' files go (a run's handshake folder)")
    parser.add_argument("--campaign-over", action="store_true", help="master: the campaign's last run (remote workers then exit)")
    parser.add_argument("--plan-from-master", action="store_true", help="worker: the plan and the logs travel over the connection")


# A worker's heartbeat is missed when it has not been sent for HEARTBEAT_LIVENESS intervals of
# 1 s; the master then deals the worker's users to the others (or, all missed, stops the test).
# Locust's 3 s suit users that sleep between tasks; a replay worker whose core is busy past its plan
# can miss that long and come back a second later ("self-healed"), so here a worker is missing after
# 10 s. A lost worker is still found and fails the run (harness/live/logs.py: plan_not_kept).
runners.HEARTBEAT_LIVENESS = 10
# The live view (harness/live/load_view.py) reads the master's stats history as it is written: a
# row a second, flushed each second too (Locust flushes every 5 s: a short run showed no figures).
LIVE_EVERY_S = 1.0
locust_stats.CSV_STATS_FLUSH_INTERVAL_SEC = LIVE_EVERY_S

REMOTE: WorkerSide | None = None
"""This worker's half of the remote protocol, when it runs on another machine than the master."""


_forker = os.getpid()
"""The process forking now, as its child reads it: set just before each fork (Locust imports this
file before ``--processes`` forks the workers)."""


def _note_forker() -> None:
    global _forker
    _forker = os.getpid()


def _die_with_forker() -> None:
    """A worker Locust forked (``--processes``) is SIGKILLed when its master dies by a signal (the
    master reaps it on every other exit; the harness binds the master itself: ``spawn``), from the
    fork on. Bound at Locust's init instead, a worker forked just before its master was killed
    retried its connection to the gone master for Locust's 5 minutes (CI: the orphan test's kill
    at 12.9 s left one)."""
    die_with_parent(_forker, signal.SIGKILL)


os.register_at_fork(before=_note_forker, after_in_child=_die_with_forker)


@events.init.add_listener
def _remote(environment, runner, **_kwargs) -> None:
    """Master or remote worker of a run over several machines (``scenarios.remote``); read at
    init, before the master's options (copied to workers with each spawn) overwrite the worker's.
    Local workers flush their stats before the master quits (``_flush_stats``)."""
    global REMOTE
    options = environment.parsed_options
    if isinstance(runner, MasterRunner) and options.remote_dir:
        MasterSide(environment, Path(options.remote_dir), Path(options.plan), options.campaign_over)
    elif isinstance(runner, WorkerRunner) and options.plan_from_master:
        REMOTE = WorkerSide(environment)
    elif isinstance(runner, MasterRunner):
        _flush_stats(environment)
    elif isinstance(runner, WorkerRunner):
        # Locust's report of this worker's stats, sent now (a worker reports every 3 s otherwise);
        # the answer follows it on the one connection, so the master has the stats when it reads it
        runner.register_message(FLUSH, lambda *_a, **_k: (runner._send_stats(), runner.send_message(FLUSHED)))


FLUSH, FLUSHED = "rb_flush_stats", "rb_stats_flushed"
FLUSH_WAIT_S = 10.0


def _flush_stats(environment) -> None:
    """On quit Locust's master gives its workers 0.5 s for their last stats report; on a busy
    machine a report comes later and its requests are missing from Locust's stats and CSV. So
    before the quit the master asks each worker for its stats now and waits (bounded) for every
    answer."""
    runner, flushed = environment.runner, set()
    runner.register_message(FLUSHED, lambda msg, **_k: flushed.add(msg.node_id))

    def wait(**_kwargs) -> None:
        expected = {client.id for client in runner.clients.all}
        runner.send_message(FLUSH)
        deadline = time.time() + FLUSH_WAIT_S
        while expected - flushed and time.time() < deadline:
            gevent.sleep(0.05)

    environment.events.quitting.add_listener(wait)


LATE_KEY = "rb_late_groups"
"""A worker's late groups so far, in its every stats report to the master (Locust's ``report_to_master``)."""


@events.report_to_master.add_listener
def _report_late(client_id, data, **_kwargs) -> None:
    data[LATE_KEY] = LOG.late_groups


@events.init.add_listener
def _write_late_live(environment, runner, **_kwargs) -> None:
    """The live view's late sends: the master sums its workers' reports (remote ones too), a lone
    local runner counts its own; either rewrites ``<csv prefix>_late_sends.txt`` about every second."""
    prefix = getattr(environment.parsed_options, "csv_prefix", None)
    if not prefix or not isinstance(runner, MasterRunner | LocalRunner):
        return
    path, heard = Path(f"{prefix}{LIVE_LATE_SUFFIX}"), {}
    if isinstance(runner, MasterRunner):
        events.worker_report.add_listener(lambda client_id, data, **_k: heard.__setitem__(client_id, data.get(LATE_KEY, 0)))

    def write_every_second() -> None:
        written = None
        while True:
            late = sum(heard.values()) if isinstance(runner, MasterRunner) else LOG.late_groups
            if late != written:
                with contextlib.suppress(OSError):  # a display's figure: never worth a failed run
                    write_text(path, str(late))
                written = late
            gevent.sleep(LIVE_EVERY_S)

    gevent.spawn(write_every_second)


class _ClientLog:
    """Raw rows of this worker process, written once when the test stops."""

    def __init__(self) -> None:
        self.rows: dict[str, list] = {name: [] for name in CLIENT_SCHEMA.names}
        self.in_flight: dict[str, tuple] = {}
        """request id -> (intended, sent, attempt, address)"""
        self.late_groups = 0
        self.warm_ups = 0
        self.path: Path | None = None
        self.tables: list[Callable[[], pa.Table]] = []
        """Rows kept in columns by a replay engine, read when the test stops."""

    def add(self, request_id: str, intended: float, sent: float, done: float, status: int, attempt: int = 1,
            fields: str | None = None, address: str | None = None, role: str = ROLE_PLAN) -> None:
        values = (request_id, intended, sent, done, status, attempt, fields, address, role)
        for name, value in zip(CLIENT_SCHEMA.names, values):
            self.rows[name].append(value)

    def warm_up(self, worker: int, sent: float, done: float, status: int, address: str | None) -> None:
        """One of the suite's own requests (is the side up?), from the warm-up's own address."""
        self.warm_ups += 1
        self.add(f"warm-up-{worker}-{os.getpid()}-{self.warm_ups}", sent, sent, done, status, 1, None, address,
                 ROLE_WARM_UP)

    def write(self) -> None:
        if self.path is None:
            return
        for request_id, (intended, sent, attempt, address) in self.in_flight.items():  # cut off by the stop
            self.add(request_id, intended, sent, float("nan"), 0, attempt, address=address)
        self.in_flight.clear()
        table = pa.concat_tables([pa.Table.from_pydict(self.rows, schema=CLIENT_SCHEMA), *(t() for t in self.tables)])
        if REMOTE is not None:  # over the connection, once (a stop and then a quit both stop the test)
            REMOTE.send_log(table, os.getpid(), self.late_groups)
            self.path = None
            return
        tmp = self.path.with_suffix(".tmp")
        pq.write_table(table, tmp)
        os.replace(tmp, self.path)
        self.path.with_suffix(LATE_SUFFIX).write_text(str(self.late_groups))


LOG = _ClientLog()


@events.test_stop.add_listener
def _flush(environment, **_kwargs) -> None:
    LOG.write()


STARTED: list[User] = []
"""The user replaying this worker's share: one per worker process, whatever the master deals."""


def _start(user: User) -> tuple[LivePlan, int]:
    """Load the plan (a remote worker: from the master, and its clock against the master's),
    point the user at the target, open this worker's client log. A second user on the same worker
    stops at once: a master that lost a worker for a moment deals its users to the others, and each
    would replay its worker's share again (the runner then fails the run: the lost worker is in
    Locust's log, and its share is missing from the client log)."""
    if STARTED:
        raise StopUser()
    STARTED.append(user)
    user.shift_s = 0.0
    if REMOTE is not None:
        plan, worker = REMOTE.plan()
        user.shift_s = REMOTE.measure_clock().offset_s  # every time logged is on the master's clock
        LOG.path = Path(client_part(worker, os.getpid()))  # a name only: the log travels to the master
        user.host = plan.hosts[0]
        return plan, worker
    plan = LivePlan.load(Path(user.environment.parsed_options.plan))
    worker = max(0, getattr(user.environment.runner, "worker_index", 0))
    user.host = plan.hosts[0]
    client_dir = Path(plan.client_dir)
    client_dir.mkdir(parents=True, exist_ok=True)
    LOG.path = client_dir / client_part(worker, os.getpid())
    return plan, worker


def _say_ready(client_dir: Path, worker: int) -> None:
    """The ready marker: in the handshake folder, or (remote) sent to the master, on its clock."""
    if REMOTE is not None:
        REMOTE.ready()
    else:
        (client_dir / ready_marker(worker)).write_text(f"{time.time():.6f}")


def _await_side(user: ReactiveUser, worker: int, timeout_s: float = 30.0) -> None:
    """The harness starts Locust and the side together: ask until it answers 200, from the
    warm-up's own address, each answer in the client log; open one connection from each client's
    address, sending nothing on it; then say ready."""
    source = user.plan.own_address(WARM_UP_ADDRESS)
    session = user.sessions.get(source)
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        sent = time.time()
        with session.get("/healthz", name="warm-up", catch_response=True) as response:
            status = response.status_code or 0
            response.success()  # not up yet: not a failure of the side under test
        if status:
            LOG.warm_up(worker, sent - user.shift_s, time.time() - user.shift_s, status, source)
        if status == 200:
            break
        gevent.sleep(0.05)
    for address in {user.addresses[request.client_id] for _, request in user.initial}:  # this worker's clients
        user.sessions.warm(address, user.host)
    _say_ready(Path(user.plan.client_dir), worker)


class PlanUser(User):
    """One per worker: replays this worker's share of an open-loop plan with the raw replay
    engine (``scenarios.raw_replay``): pre-encoded requests, warm keep-alive sockets, a group
    written back to back at its deadline, replies read while it waits. Every reply fires Locust's
    ``request`` event, so Locust's stats, CSV and web UI count what the client log holds."""

    host = "http://127.0.0.1"

    def on_start(self) -> None:
        plan, worker = _start(self)
        self.plan = plan
        share = off_loop(build_share, plan, worker, self.shift_s)  # seconds for a large plan: heartbeats go on
        self.ids, self.methods, self.names = share.ids, share.methods, share.names
        self.intended, self.batches, self.sources = share.intended, share.batches, share.sources
        self.engine, self.worker = RawReplay(share.requests, self._reply), worker
        LOG.tables.append(self._table)
        self._warm_up(share.requests, Path(plan.client_dir), worker)

    def _warm_up(self, requests: list[Wire], client_dir: Path, worker: int) -> None:
        """Wait for the side (asked from the warm-up's own address, each answer in the client
        log); open, per client address and host, as many connections as its largest group or its
        rate needs, sending nothing on them; then say ready."""
        span = max(1e-3, (self.batches[-1].deadline - self.batches[0].deadline) if self.batches else 1.0)
        need = connections_needed(requests, [b.requests for b in self.batches], span, WARM_LATENCY_S, WARM_SPARE)
        deadline = time.time() + 30.0
        for host in sorted({w.origin.host for w in requests}):  # the harness starts Locust and the side together
            origin = Origin(host, self.plan.own_address(WARM_UP_ADDRESS))
            while not self._answered(origin, worker):
                if time.time() > deadline:
                    raise StopUser()
                gevent.sleep(0.05)
        self.engine.warm(need, path=None)
        gc.freeze()  # the plan's objects live until the end: a full collection would stall a deadline walking them
        _say_ready(client_dir, worker)

    def _answered(self, origin: Origin, worker: int) -> bool:
        """One health check from the warm-up's address: True once the side answers it 200."""
        sent = time.time()
        try:
            status = self.engine.warm({origin: 1})[0]
        except OSError:  # not listening yet: nothing reached it
            return False
        LOG.warm_up(worker, sent - self.shift_s, time.time() - self.shift_s, status, origin.source)
        self.environment.events.request.fire(request_type="GET", name="warm-up", response_time=0.0, response_length=0,
                                             exception=None if status == 200 else CatchResponseError(f"status {status}"),
                                             context={})
        return status == 200

    @task
    def replay(self) -> None:
        engine = self.engine
        try:
            for deadline, indexes, burst in self.batches:
                engine.wait_until(deadline, spin=burst)  # replies are read meanwhile
                if time.time() - deadline > LATE_S:
                    LOG.late_groups += 1
                engine.send_group(indexes)
            if REMOTE is None:
                (Path(self.plan.client_dir) / sent_marker(self.worker)).write_text(f"{time.time():.6f}")
            engine.drain()
        finally:
            engine.close()
        raise StopUser()

    def _reply(self, i: int, status: int, length: int) -> None:
        engine = self.engine
        self.environment.events.request.fire(
            request_type=self.methods[i], name=self.names[i], response_time=(engine.done[i] - engine.sent[i]) * 1000.0,
            response_length=length, exception=None if status in EXPECTED else CatchResponseError(f"status {status}"),
            context={})

    def _table(self) -> pa.Table:
        """The sent requests of this share, from the engine's columns (cut off by the stop:
        no done time, status 0)."""
        engine = self.engine
        sent = ~np.isnan(engine.sent)
        return pa.table({
            "request_id": pa.array(np.asarray(self.ids, dtype=object)[sent], pa.string()),
            "intended_t": self.intended[sent], "sent_t": engine.sent[sent] - self.shift_s,
            "done_t": engine.done[sent] - self.shift_s,
            "status": engine.status[sent], "attempt": np.ones(int(sent.sum()), dtype=np.int32),
            "limit_fields": pa.array([f for f, s in zip(engine.fields, sent) if s], pa.string()),
            "client_address": pa.array(self.sources[sent], pa.string()),
            "role": pa.array([ROLE_PLAN] * int(sent.sum()), pa.string()),
        }, schema=CLIENT_SCHEMA)


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
        self.initial, self.addresses = off_loop(_reactive_share, plan, worker)
        self.sessions = BoundSessions(self)
        self.ids = itertools.count(1)
        self.in_flight = Group()
        _await_side(self, worker)

    @task
    def replay(self) -> None:
        for request_id, request in self.initial:
            self.in_flight.spawn(self._fire, request, request_id)
        self.in_flight.join()  # follow-ups join the group before their cause leaves it
        raise StopUser()

    def _fire(self, request: Request, request_id: str) -> None:
        start_at, shift = self.plan.start_at, self.shift_s
        deadline = start_at + request.t
        _sleep_until(deadline + shift)
        route = model_route(request.route)
        method, path = route.method, route.path
        address = self.addresses[request.client_id]  # a follow-up leaves from its client's address
        sent = time.time() - shift
        LOG.in_flight[request_id] = (deadline, sent, request.attempt, address)
        sending = request_headers(request, request_id, self.plan.key_prefix)
        with self.sessions.get(address).request(method, path, headers=sending, name=f"{method} {path}",
                                 catch_response=True) as response:
            status = response.status_code or 0
            headers = {k.lower(): v for k, v in (response.headers or {}).items()}
            answer = outcome(status, headers)
            if status in RETRIED_EXPECTED:
                response.success()  # a refusal the model answers is an expected outcome
            else:
                response.failure(f"status {status}")
        done = time.time() - shift
        LOG.in_flight.pop(request_id, None)
        LOG.add(request_id, deadline, sent, done, status, request.attempt, limit_lines(headers), address)
        if answer is None:
            return
        for follow in self.model.react(request._replace(t=done - start_at), answer):
            follow_id = request_id if follow.attempt > request.attempt else follow_up_id(request_id, next(self.ids))
            self.in_flight.spawn(self._fire, follow, follow_id)


def _reactive_share(plan: LivePlan, worker: int) -> tuple[list[tuple[str, Request]], dict[str, str | None]]:
    """A closed-loop worker's planned requests (every n-th, by id) and each client's address."""
    arrivals = plan.arrivals()
    return [(f"r{i}", r) for i, r in enumerate(arrivals.requests()) if i % plan.workers == worker], plan.address_of()


def _sleep_until(t: float) -> None:
    """gevent.sleep to ~2 ms before ``t``, then yield-spin: timer granularity is ~1 ms. Always
    yields at least once, so a scheduler that is behind still lets released requests run."""
    remaining = t - time.time()
    if remaining > 0.002:
        gevent.sleep(remaining - 0.002)
    gevent.sleep(0)
    while time.time() < t:
        gevent.sleep(0)
