"""``run_bench.py run``: drive a live campaign end to end.

Per run: write the plan (its hosts and routing), start Locust headless (its own process group;
master/worker mode with N forked workers when N > 1) and the K target nodes (each its own
process group and decision log), sample every process's CPU, wait (stopping and restarting Redis
when the scenario asks), stop the targets with SIGTERM (they flush their decision logs), merge
the logs and write run.json. Runs on the redis store share one Redis: REDIS_URL or the
campaign's ``redis.url``, else a redis-server of the runner's own, started on first use and
stopped when the campaign ends. Every file is written atomically; a run that fails keeps its
partial files and is marked failed with its log's tail, and the campaign goes on. SIGINT/SIGTERM
stop every child at once (Redis included), mark the run interrupted and keep the finished ones.
"""

from __future__ import annotations

import math
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import asdict
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import yaml

from analysis.cpu import generator_bound
from contract.atomic import atomic_write, write_text
from contract.folder import ResultsFolder, utc_stamp
from contract.machine import machine_facts
from contract.run_info import RunRecord
from contract.schema import (
    CAMPAIGN_FILE,
    CLIENT_FILE,
    CPU_COLUMNS,
    CPU_FILE,
    DECISIONS_FILE,
    HANDSHAKE_DIR,
    JOINED_GLOB,
    LOCUST_DIR,
    PLAN_FILE,
    ROLE_GENERATOR,
    ROLE_PLAN,
    ROLE_TARGET,
    RUN_DEGRADED,
    RUN_FAILED,
    RUN_FILE,
    RUN_INTERRUPTED,
    RUN_OK,
    SYSTEM_SUITE,
    TWIN_FILE,
)
from harness.campaign.live import Campaign
from harness.campaign.peers.own_file import ConfigPeer
from harness.events import RunnerEvents
from harness.processes.ports import HOST, free_ports
from harness.processes.redis_server import RedisServer, RedisServerError
from harness.processes.target import TargetProcess
from harness.sim.simulator import simulate
from scenarios import SCENARIOS
from scenarios.fleet import Fleet
from scenarios.live_plan import LivePlan, aligned_start, user_class
from targets.redact import redacted

from . import cpus
from .cpu_sampler import CpuSampler, cpu_csv
from .generator import GeneratorWatch
from .load_view import LOCUST_HISTORY, load_figures
from .logs import plan_not_kept, slowest_ready
from .measures import (
    degraded_reasons,
    failed_requests,
    fleet_measures,
    measured_window,
    model_phases,
    store_degradation,
    store_failure_measures,
)
from .peers import live_peer
from .plan import LiveRun, PeerLimiter
from .remote import RemoteWorkers, remote_clocks
from .sides.base import Side, SideSetup
from .sides.suite import SuiteSide
from .supervise import Interrupted, Processes, RunFailed, SideLate, interrupts_deferred, signals_interrupt, tail

ROOT = Path(__file__).resolve().parents[2]
LOCUSTFILE = ROOT / "scenarios" / "locustfile.py"


FIRST_LEAD_S = 5.0
"""The first run's lead: Locust's start-up is unknown until it has been measured once."""
LEAD_MARGIN_S = 0.75
LATE_LEAD_FACTOR = 1.5
"""A late side's second attempt waits this many times its measured start-up (plus the margin): a
machine busy enough to make a side late moves its next start-up too (8 s, then 10.4 s at load 13)."""
SAFETY_S = 60
"""Locust's own --run-time is a safety net this far beyond the plan (past the grace a worker behind its
plan has to finish its sends: generator.SENT_GRACE_S); the harness stops it."""
STOP_TIMEOUT_S = 30.0


NODE_LEAD_S = 0.75
"""Extra lead per node beyond the first: K targets start in parallel on shared cores."""


class LiveRunner:
    def __init__(self, campaign: Campaign, out: Path, workers: int | None = None,
                 events: RunnerEvents[LiveRun] | None = None, remote: RemoteWorkers | None = None,
                 scale_auto: dict[str, Any] | None = None) -> None:
        self.campaign = campaign
        self.scale_auto = scale_auto
        """What ``scale.auto`` chose (harness/live/autoscale.py), kept in campaign.yaml."""
        self.folder = ResultsFolder(out.resolve())  # absolute: targets and peers start in the repository's root
        self.remote = remote
        """Workers on other machines (``run_bench.py worker``) instead of local forked ones."""
        self.workers = remote.count if remote else workers or campaign.scale.workers
        self.last_run: str | None = None
        """The campaign's last run: its master tells remote workers the campaign is over."""
        self.events: RunnerEvents[LiveRun] = events or RunnerEvents()
        self.lead_s = max(campaign.scale.lead_s, FIRST_LEAD_S)
        self.processes = Processes()
        self.redis: RedisServer | None = None
        """Our own redis-server, when no REDIS_URL was given (started on first use)."""
        self.address_blocks = 0
        """Client address blocks taken by runs against sides that outlive them (``_plan``)."""

    def redis_url(self) -> str:
        """The Redis every redis run uses: REDIS_URL, the campaign's ``redis.url``, else our own."""
        url = os.environ.get("REDIS_URL") or self.campaign.redis.url
        if url:
            return url
        if self.redis is None:
            self.redis = RedisServer()
        return self.redis.start().url

    def close(self) -> None:
        """Stop every child and our own Redis (run_all does; direct ``execute`` callers must)."""
        self.processes.stop_all()
        if self.redis is not None:
            self.redis.close()
            self.redis = None

    # -- one run ------------------------------------------------------------------------------

    def execute(self, run: LiveRun) -> dict[str, Any]:
        """Run one scenario x algorithm x store; returns its run.json content."""
        return self._execute(run).to_json()

    def _execute(self, run: LiveRun) -> RunRecord:
        """The run's steps (``_load``), its record written however they end: a failed run keeps
        what it got to, an interrupted one is marked so and the interruption goes on."""
        run_dir = self.folder.run_dir(run.name)
        (run_dir / "logs").mkdir(parents=True, exist_ok=True)
        record = planned_record(run, self.workers)
        cores = cpus.split(cpus.available()) if self.campaign.scale.pin else None
        watch = _Watch(cores)
        if run.system == "suite":
            record.add(server=self.campaign.server)
        if isinstance(run.limiter, PeerLimiter) and isinstance(run.limiter.peer, ConfigPeer):
            record.add(peer_config=run.limiter.peer.recorded())
        if self.campaign.scale.pin:
            record.add(cpus=cores.as_json() if cores else "not pinned: fewer than 2 cores")
        try:
            self._own_services(run, record)
            self._attempts(run, run_dir, record, watch)
            reasons = degraded_reasons(record.to_json(), outage_planned=record.get("store_failure") is not None)
            record.add(degraded_reasons=reasons, status=RUN_DEGRADED if reasons else RUN_OK)
        except RunFailed as exc:
            record.add(error=str(exc))
        except Interrupted:
            record.add(status=RUN_INTERRUPTED)
            raise
        finally:
            with interrupts_deferred():  # the run is recorded whatever signal comes meanwhile
                self.processes.stop_all()
                rows = measured_window(watch.sampler.stop(), record.to_json(), watch.sampler.interval_s)
                write_text(run_dir / CPU_FILE, cpu_csv(rows))
                record.add(generator_bound=generator_bound(pd.DataFrame(rows, columns=CPU_COLUMNS),
                                                           record.get("late_share")))
                record.write(run_dir / RUN_FILE)
        return record

    def _attempts(self, run: LiveRun, run_dir: Path, record: RunRecord, watch: _Watch) -> None:
        """The run's steps; once more, from an empty run folder and with a lead that covers the
        side's start-up with room to spare, when the side was ready only after the plan's first
        send (a busy machine: the plan was sent to ports nobody listened on yet). Late twice: the
        run fails, saying so."""
        try:
            self._load(run, run_dir, self._side(run, run_dir), record, watch)
        except SideLate as late:
            self.processes.stop_all()
            watch.restart()
            _emptied(run_dir)
            self.lead_s = max(self.lead_s, late.start_up_s * LATE_LEAD_FACTOR + LEAD_MARGIN_S)
            record.add(started_again=f"{late}: started again with a {self.lead_s:.1f} s lead")
            try:
                self._load(run, run_dir, self._side(run, run_dir), record, watch)
            except SideLate as again:
                raise RunFailed(f"{again}, even with a {self.lead_s:.1f} s lead") from None

    def _side(self, run: LiveRun, run_dir: Path) -> Side:
        """The side under test: the suite's nodes, or the run's peer (one it starts, or a URL)."""
        reserved = frozenset([self.remote.port]) if self.remote else frozenset()
        setup = SideSetup(run, self.campaign, run_dir, self.processes, self.redis_url, reserved)
        limiter = run.limiter
        return live_peer(limiter.peer).side(setup) if isinstance(limiter, PeerLimiter) else SuiteSide(setup)

    def _own_services(self, run: LiveRun, record: RunRecord) -> None:
        """Our own redis-server up again if it died since the last run (killed from outside; the
        note goes in this run's record); and a scenario that stops Redis only on ours."""
        restarted = self._restart_own_redis()
        if restarted:
            record.add(redis_restarted=restarted)
        if run.model.outage() is not None and self.redis_url() and self.redis is None:  # not ours: cannot stop it
            raise RunFailed(f"{run.scenario.name} stops Redis mid-run: it needs the runner's own redis-server "
                            "(unset REDIS_URL and the campaign's redis.url)")

    def _restart_own_redis(self) -> str | None:
        """Why our own redis-server was started again (it had exited), or None: it is not ours,
        not started yet, or alive (stopped by a store-failure run: ``redis_url`` starts it)."""
        server = self.redis
        if server is None or server.process is None or server.process.poll() is None:
            return None
        code = server.process.returncode
        server.stop()
        try:
            server.start()
        except RedisServerError as exc:
            raise RunFailed(f"the runner's own redis-server had exited ({code}) and did not start again: {exc}") from None
        return f"the runner's own redis-server on port {server.port} had exited ({code}): restarted before this run"

    def _load(self, run: LiveRun, run_dir: Path, side: Side, record: RunRecord, watch: _Watch) -> None:
        """The run's steps: Locust and the side started, the plan replayed, the results gathered."""
        hosts = side.hosts()
        if self.remote:  # their master first: the plan's start is set once every worker has joined
            locust = watch.generator(self._start_master(run, run_dir, hosts[0]))
            self._await_workers(locust, run_dir / HANDSHAKE_DIR, run_dir / "logs" / "locust.log")
            launched = time.time()
        start_at = aligned_start(time.time(), self._lead(run, side), run.policy.window_s)
        record.add(start_at=start_at)
        side.configure(start_at)
        plan = self._plan(run, run_dir, hosts, start_at, side)
        end_at = self._schedule(run, plan, record)
        # Locust imports for seconds: start it first, the side meanwhile; all are ready before
        # start_at, or the late groups say so
        if not self.remote:
            launched = time.time()  # pinned before it forks its workers: they inherit it
            locust = watch.generator(self._start_locust(plan, run_dir, math.ceil(end_at - time.time()) + SAFETY_S))
        side_launched = time.time()
        watch.targets(side.start())
        side_up_s = _ready_in_time(side_launched, plan)
        marked = plan.user_class == "PlanUser" and not self.remote  # a local open-loop worker marks its last send
        generator = GeneratorWatch(run_dir / HANDSHAKE_DIR, self.workers, launched, first_send(plan), marked, locust)
        happened = self._wait(locust, side, end_at, run_dir / "logs" / "locust.log", self._store_events(run, plan), generator,
                              self._load_view(plan, end_at, run_dir))
        self._learn_lead(run_dir / HANDSHAKE_DIR, launched, side_up_s)
        self._results(run, run_dir, side, plan, record, happened)

    def _lead(self, run: LiveRun, side: Side) -> float:
        """Seconds from now to the plan's start: the learned lead, more for more nodes, and a
        side's own start-up (a lead learned from a suite run knows nothing of a peer's start)."""
        lead = self.lead_s + NODE_LEAD_S * (len(run.nodes) - 1)
        return max(lead, self.campaign.scale.lead_s + side.start_s) if side.start_s else lead

    def _plan(self, run: LiveRun, run_dir: Path, hosts: list[str], start_at: float, side: Side) -> LivePlan:
        """The plan Locust replays, saved in the run folder; it carries the run's own model. A side
        that outlives its runs meets each run's clients on addresses no earlier run used."""
        block = 0
        if side.outlives_run:
            self.address_blocks += 1
            block = self.address_blocks
        plan = LivePlan(run.scenario.name, run.policy.limit, run.policy.window_s, run.seed, start_at,
                        hosts, str(run_dir / HANDSHAKE_DIR), self.workers, dict(run.scenario.params),
                        routing=run.routing, joins_s=list(run.joins_s), address_block=block).with_model(run.model)
        plan.save(run_dir / PLAN_FILE)
        return plan

    def _schedule(self, run: LiveRun, plan: LivePlan, record: RunRecord) -> float:
        """When the load ends (the last send, a closed-loop model's follow-ups too, and the drain);
        the plan's facts in the record."""
        arrivals = plan.arrivals()
        end_at = plan.start_at + max(arrivals.t[-1] if len(arrivals) else 0.0, run.model.horizon_s()) \
            + self.campaign.scale.drain_s
        record.add(planned_requests=len(arrivals), end_at=end_at, phases=model_phases(run.model, plan.start_at, end_at),
                   nodes=run.nodes, routing=run.routing, joins_s=list(run.joins_s))
        return end_at

    @staticmethod
    def _store_events(run: LiveRun, plan: LivePlan) -> list[tuple[float, str]]:
        """A store failure's ``stop`` and ``start`` of our own Redis, in epoch seconds."""
        outage = run.model.outage()
        return [] if outage is None else [(plan.start_at + t, name) for t, name in zip(outage, ("stop", "start"))]

    def _results(self, run: LiveRun, run_dir: Path, side: Side, plan: LivePlan, record: RunRecord,
                 happened: dict[str, float]) -> None:
        """After the load: what a peer says when it refuses, the side stopped, the remote workers'
        clocks, the decisions and the client log, the measures."""
        response = side.response()
        if response is not None:
            record.add(response=response)
        side.stop()
        if self.remote:  # before the client logs are merged: that consumes the handshake folder
            record.add(**remote_clocks(run_dir / HANDSHAKE_DIR, self.workers))
        record.add(**side.results(plan))
        not_kept = plan_not_kept(record.to_json(), run_dir / "logs" / "locust.log")
        if not_kept:
            raise RunFailed(f"the plan was not replayed as planned: {not_kept}")
        if not side.live_counters:  # counted from its decisions, now that it has them
            allowed = pq.read_table(run_dir / DECISIONS_FILE, columns=["allowed"]).column("allowed").to_pylist()
            self.events.counted({"limits": {run.limiter.label: {"decisions": len(allowed), "rejections": allowed.count(False)}}})
        record.add(**self._measures(run, run_dir, happened, record))

    def _measures(self, run: LiveRun, run_dir: Path, happened: dict[str, float], record: RunRecord) -> dict[str, Any]:
        """Fleet measures for a multi-node run, outage measures (and phase) for a store failure."""
        decisions = pq.read_table(run_dir / DECISIONS_FILE).to_pandas()
        out: dict[str, Any] = {"degraded": store_degradation(decisions)}
        if len(run.joins_s) > 1:
            out["fleet"] = fleet_measures(decisions, run.policy.limit, run.policy.window_s,
                                          [record.start_at + j for j in run.joins_s], run.routing)
        if "stop" in happened and "start" in happened:
            window = (happened["stop"], happened["start"])
            out["phases"] = [*record.phases, {"name": "outage", "start_t": window[0], "end_t": window[1]}]
            client = pq.read_table(run_dir / CLIENT_FILE, columns=["status"], filters=[("role", "==", ROLE_PLAN)]).to_pandas()
            out["store_failure"] = store_failure_measures(decisions, client, *window, run.policy.limit / len(run.joins_s),
                                                          run.policy.window_s)
        if run.system == SYSTEM_SUITE:  # a peer's own refusals (nginx's 503) are its answers
            client = pq.read_table(run_dir / CLIENT_FILE, columns=["intended_t", "status"],
                                   filters=[("role", "==", ROLE_PLAN)]).to_pandas()
            out["failed_requests"] = failed_requests(client, out.get("phases", record.phases or []))
        return out

    def _locust(self, run_dir: Path, run_time: int, host: str, users: str, *role: str) -> subprocess.Popen:
        """Locust on this run's plan, headless, its stats in the run's locust folder; ``role``: the
        options of a master or of local worker processes."""
        locust_dir = run_dir / LOCUST_DIR
        locust_dir.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless", "--only-summary", *role,
               "-u", str(self.workers), "-r", str(self.workers), "-t", f"{run_time}s", "--stop-timeout", "3",
               "--csv", str(locust_dir / "stats"), "--exit-code-on-error", "0", "--plan", str(run_dir / PLAN_FILE),
               "--host", host, users]
        return self.processes.start(cmd, run_dir / "logs" / "locust.log", ROOT)

    def _start_locust(self, plan: LivePlan, run_dir: Path, run_time: int) -> subprocess.Popen:
        """Locust for a local run; its forked workers (``--processes``) meet their master on a port
        of the run's own on 127.0.0.1, none of the side's. Locust's default is 5557 on every
        interface: with two campaigns at once on one machine the second master was refused it, and
        its workers joined the first's, which then "lost" workers it never had (CI: a run failed)."""
        local: list[str] = []
        if self.workers > 1:
            [port] = free_ports(1, avoid=frozenset(p for host in plan.hosts if (p := urlsplit(host).port) is not None))
            local = ["--processes", str(self.workers), "--master-bind-host", HOST, "--master-bind-port", str(port),
                     "--master-port", str(port)]
        return self._locust(run_dir, run_time, plan.hosts[0], plan.user_class, *local)

    def _start_master(self, run: LiveRun, run_dir: Path, host: str) -> subprocess.Popen:
        """A Locust master on the campaign's fixed port for the remote workers; it sends them the
        plan once the harness has written it and writes what they send back into the run folder."""
        assert self.remote is not None
        model, scale = run.model, self.campaign.scale
        last_t = max([*model.arrivals().t[-1:], model.horizon_s()])  # the run's model: generated once
        run_time = math.ceil(self.remote.timeout_s + self.lead_s + last_t + scale.drain_s) + SAFETY_S
        master = ["--master", "--master-bind-host", self.remote.host, "--master-bind-port", str(self.remote.port),
                  "--expect-workers", str(self.workers), "--expect-workers-max-wait", str(math.ceil(run_time)),
                  "--remote-dir", str(run_dir / HANDSHAKE_DIR), *(["--campaign-over"] if run.name == self.last_run else [])]
        return self._locust(run_dir, run_time, host, user_class(model), *master)

    def _await_workers(self, locust: subprocess.Popen, handshake: Path, log: Path) -> None:
        """Until every remote worker has joined this run's master, or the timeout says how many came."""
        assert self.remote is not None
        deadline = time.time() + self.remote.timeout_s
        while (came := len(list(handshake.glob(JOINED_GLOB)))) < self.workers:
            if locust.poll() is not None:
                raise RunFailed(f"the Locust master exited with {locust.returncode} before the workers came:\n{tail(log)}")
            if time.time() > deadline:
                raise RunFailed(f"{came} of {self.workers} remote workers joined the master on {self.remote.address} "
                                f"within {self.remote.timeout_s:g} s (start them with: run_bench.py worker --master "
                                f"{self.remote.address})")
            time.sleep(0.05)

    def _load_view(self, plan: LivePlan, end_at: float, run_dir: Path) -> Callable[[], None] | None:
        """What the live view is told each wake (``RunnerEvents.load``), or None: nobody listens."""
        if self.events.load is None:
            return None
        t = np.asarray(plan.arrivals().t, dtype=np.float64)
        history = run_dir / LOCUST_DIR / LOCUST_HISTORY
        return lambda: self.events.loaded(load_figures(t, plan.start_at, end_at, time.time(), history))

    def _wait(self, locust: subprocess.Popen, side: Side, end_at: float, log: Path,
              events: list[tuple[float, str]], generator: GeneratorWatch,
              view: Callable[[], None] | None = None) -> dict[str, float]:
        """Until the plan is over, running the scenario's store events on time (``stop``/``start``
        of our own Redis) and watching the side's processes; then SIGTERM to the Locust master,
        which stops its workers and lets every worker write its client log. Returns when each
        event really happened."""
        pending = sorted(events)
        happened: dict[str, float] = {}
        counters = side.counters_url if self.events.wants_counters else None
        with httpx.Client(timeout=0.5) as http:
            while time.time() < end_at:
                while pending and time.time() >= pending[0][0]:
                    _, action = pending.pop(0)
                    assert self.redis is not None
                    self.redis.stop() if action == "stop" else self.redis.start()
                    happened[action] = time.time()
                if locust.poll() is not None:
                    raise RunFailed(f"locust exited early with {locust.returncode}:\n{tail(log)}")
                generator.check()
                for target in side.started:
                    if target.process.poll() is not None:
                        raise RunFailed(f"a target died (exit {target.process.returncode}):\n{tail(target.stderr_path)}")
                if counters:
                    with suppress(httpx.HTTPError, ValueError, KeyError):
                        self.events.counted(http.get(counters).json())
                if view is not None:
                    view()
                next_t = min([end_at, *(t for t, _ in pending)])
                time.sleep(min(0.5, max(0.0, next_t - time.time())))
        generator.await_sent()
        with suppress(ProcessLookupError):
            locust.send_signal(signal.SIGTERM)
        try:
            locust.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise RunFailed(f"locust did not stop within {STOP_TIMEOUT_S:.0f} s:\n{tail(log)}") from None
        return happened

    def _learn_lead(self, client_dir: Path, launched: float, side_up_s: float) -> None:
        """The next run's lead: the slowest worker's start-up here, or the side's if it was
        slower (a busy machine), plus a margin."""
        ready = slowest_ready(client_dir)
        if ready is not None:
            self.lead_s = max(self.campaign.scale.lead_s, ready - launched + LEAD_MARGIN_S, side_up_s + LEAD_MARGIN_S)

    def run_all(self, runs: list[LiveRun]) -> list[dict[str, Any]]:
        root = self.folder.root
        root.mkdir(parents=True, exist_ok=True)
        config = self.campaign.model_dump(mode="json")
        config.update(workers=self.workers, runs=[r.name for r in runs], machine=machine_facts(), created=utc_stamp())
        if self.scale_auto:
            config["scale_auto"] = self.scale_auto
        write_text(root / CAMPAIGN_FILE, yaml.safe_dump(redacted(config), sort_keys=False))
        results = []
        self.last_run = runs[-1].name if runs else None
        try:
            with signals_interrupt():
                for i, run in enumerate(runs, 1):
                    self.events.started(i, len(runs), run)
                    record = self._execute(run)
                    record.add(virtual_over_admission=self._virtual(run))
                    record.write(self.folder.run_dir(run.name) / RUN_FILE)
                    results.append(record.to_json())
                    self.events.done(i, len(runs), run, results[-1])
        finally:
            self.close()
        return results

    def _virtual(self, run: LiveRun) -> float | None:
        """The same scenario in virtual time, for the live-vs-simulated comparison (a peer's twin
        kept beside its decisions: the summary's row after the live one)."""
        limiter = run.limiter
        if limiter.label == "adaptive" or run.scenario.name not in SCENARIOS:
            return None
        from analysis.metrics import over_admission

        if isinstance(limiter, PeerLimiter):  # its mapped model (harness/campaign/peers/); a url peer claiming nothing has none
            twin = limiter.peer.twin(run.policy)
            if twin is None:
                return None
            table, _ = simulate(run.model, twin[0], twin[1], run.params)
            atomic_write(self.folder.run_dir(run.name) / TWIN_FILE, lambda tmp: pq.write_table(table, tmp))
            return round(over_admission(table.to_pandas(), run.policy.limit, run.policy.window_s), 6)

        fleet = Fleet(tuple(run.joins_s), run.routing, limiter.store.virtual_store) if len(run.joins_s) > 1 else None
        if run.limiters == "per-process":  # one node's N local limiters; the kernel spreads its connections
            fleet = Fleet((0.0,) * run.processes * len(run.joins_s), "round_robin", "local")
        table, _ = simulate(run.model, limiter.algorithm, run.policy, run.params, fleet=fleet)
        return round(over_admission(table.to_pandas(), run.policy.limit, run.policy.window_s), 6)


def first_send(plan: LivePlan) -> float:
    """When the plan's first request is due (epoch seconds)."""
    arrivals = plan.arrivals()
    return plan.start_at + (float(arrivals.t[0]) if len(arrivals) else 0.0)


def _ready_in_time(launched: float, plan: LivePlan) -> float:
    """The side's start-up (s), now that it is ready; SideLate when that is after the plan's first send."""
    now = time.time()
    if now > first_send(plan):
        raise SideLate(now - first_send(plan), now - launched)
    return now - launched


def _emptied(run_dir: Path) -> None:
    """The run folder as a run starts it: an attempt's files (its plan, logs, handshake, decision
    log parts) must not mix with the next attempt's."""
    shutil.rmtree(run_dir)
    (run_dir / "logs").mkdir(parents=True)


def planned_record(run: LiveRun, workers: int) -> RunRecord:
    """run.json as far as the plan says: failed until the run's steps say otherwise."""
    return RunRecord(
        status=RUN_FAILED, scenario=run.scenario.run_name, algorithm=run.limiter.label, store=run.limiter.store_label,
        system=run.system,
        policy={"limit": run.policy.limit, "window_s": run.policy.window_s, "burst": run.policy.burst},
        params=asdict(run.params), scenario_params=dict(run.scenario.params), workers=workers,
        processes=run.processes, limiters=run.limiters, seed=run.seed, repeat=run.repeat if run.repeats > 1 else None,
        gateway=run.scenario.gateway.spelled() if run.scenario.gateway else None)


class _Watch:
    """Every process of a run sampled for cpu.csv and, with ``scale.pin``, pinned to its half of
    the cores: the generator (before it forks its workers: they inherit it) and the side's."""

    def __init__(self, cores: cpus.CpuSplit | None) -> None:
        self.sampler, self.cores = CpuSampler(), cores

    def restart(self) -> None:
        """A fresh sampler for the run's next attempt (the last one's samples are of no use)."""
        self.sampler.stop()
        self.sampler = CpuSampler()

    def generator(self, locust: subprocess.Popen) -> subprocess.Popen:
        if self.cores:
            cpus.pin(locust.pid, self.cores.generator)
        self.sampler.watch("locust", ROLE_GENERATOR, locust.pid)
        return locust

    def targets(self, started: list[tuple[str, TargetProcess]]) -> None:
        """The side's processes, started and ready (a node's N, nginx's workers all exist); then
        sampling begins."""
        for name, target in started:
            self.sampler.watch(name, ROLE_TARGET, target.pid)
        if self.cores:
            for _, target in started:
                cpus.pin(target.pid, self.cores.targets)
        self.sampler.start()
