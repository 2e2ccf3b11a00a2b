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
import signal
import subprocess
import sys
import time
from contextlib import suppress
from dataclasses import asdict
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pyarrow.parquet as pq
import yaml

from analysis.cpu import generator_bound
from contract.atomic import write_text
from contract.folder import ResultsFolder, utc_stamp, write_parquet
from contract.machine import machine_facts
from contract.run_info import write_run_json
from contract.schema import (
    CAMPAIGN_FILE,
    CLIENT_FILE,
    CPU_COLUMNS,
    CPU_FILE,
    DECIDED_BY_CLIENT,
    DECISIONS_FILE,
    DEGRADED_PHASE,
    DOWNSTREAM_OUTAGE_PHASE,
    HANDSHAKE_DIR,
    JOINED_GLOB,
    LOCUST_DIR,
    PLAN_FILE,
    RAMP_PHASE,
    ROLE_GENERATOR,
    ROLE_TARGET,
    RUN_FAILED,
    RUN_FILE,
    RUN_INTERRUPTED,
    RUN_OK,
)
from harness.campaign.config_file import str_params
from harness.campaign.live import Campaign
from harness.campaign.peers.url import UrlPeer
from harness.events import RunnerEvents
from harness.sim.simulator import simulate
from scenarios import SCENARIOS
from scenarios.fleet import Fleet
from scenarios.live_plan import LivePlan, aligned_start, user_class
from targets.ports import free_ports
from targets.process import HOST, TargetProcess
from targets.redact import redacted
from targets.stores.redis.server import RedisServer

from . import cpus
from .config import node_configs, peer_downstream_config, target_config
from .cpu_sampler import CpuSampler, cpu_csv
from .logs import gather_client, merge_decisions, slowest_ready
from .measures import fleet_measures, measured_window, store_degradation, store_failure_measures
from .peers import live_peer
from .peers.response import refusal, without_probe
from .peers.url import client_decisions, round_trip_ms
from .plan import LiveRun
from .remote import RemoteWorkers, remote_clocks
from .supervise import Interrupted, Processes, RunFailed, interrupts_deferred, signals_interrupt, tail

ROOT = Path(__file__).resolve().parents[2]
LOCUSTFILE = ROOT / "scenarios" / "locustfile.py"


FIRST_LEAD_S = 5.0
"""The first run's lead: Locust's start-up is unknown until it has been measured once."""
LEAD_MARGIN_S = 0.75
SAFETY_S = 30
"""Locust's own --run-time is a safety net this far beyond the plan; the harness stops it."""
STOP_TIMEOUT_S = 30.0
REFUSAL_MARGIN = 50
"""Requests beyond twice the burst the refusal probe may send (refill while it sends)."""


NODE_LEAD_S = 0.75
"""Extra lead per node beyond the first: K targets start in parallel on shared cores."""


class LiveRunner:
    def __init__(self, campaign: Campaign, out: Path, workers: int | None = None,
                 events: RunnerEvents[LiveRun] | None = None, remote: RemoteWorkers | None = None) -> None:
        self.campaign = campaign
        self.folder = ResultsFolder(out)
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
        run_dir = self.folder.run_dir(run.name)
        logs = run_dir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        scale = self.campaign.scale
        info: dict[str, Any] = {
            "status": RUN_FAILED, "scenario": run.scenario.run_name, "algorithm": run.algorithm,
            "store": run.store, "system": run.system, "policy": {"limit": run.policy.limit, "window_s": run.policy.window_s,
                                            "burst": run.policy.burst},
            "params": asdict(run.params), "scenario_params": dict(run.scenario.params), "workers": self.workers,
            "processes": run.processes, "limiters": run.limiters,
        }
        sampler = CpuSampler()
        cores = cpus.split(cpus.available()) if scale.pin else None
        if scale.pin:
            info["cpus"] = cores.as_json() if cores else "not pinned: fewer than 2 cores"
        try:
            nodes = run.nodes
            endpoint = run.spec if isinstance(run.spec, UrlPeer) else None  # the user's endpoint: nothing to start
            ports = [] if endpoint else free_ports(2 * len(nodes) + (1 if run.peer else 0))
            peer_port = ports.pop() if run.peer and not endpoint else None
            ports, admin_ports = ports[:len(nodes)], ports[len(nodes):]
            hosts = [endpoint.url] if endpoint else [f"http://{HOST}:{port}" for port in ([peer_port] if peer_port else ports)]
            model = run.model
            outage = getattr(model, "outage", None)
            if outage is not None and self.redis_url() and self.redis is None:  # not ours: cannot stop it
                raise RunFailed(f"{run.scenario.name} stops Redis mid-run: it needs the runner's own redis-server "
                                "(unset REDIS_URL and the campaign's redis.url)")
            redis = run.peer is None and self.campaign.redis_mode(run.store) not in (None, "local")
            env = {**os.environ, "REDIS_URL": self.redis_url()} if redis else None
            if self.remote:  # their master first: the plan's start is set once every worker has joined
                locust = self._start_master(run, run_dir, hosts[0])
                if cores:
                    cpus.pin(locust.pid, cores.generator)
                sampler.watch("locust", ROLE_GENERATOR, locust.pid)
                self._await_workers(locust, run_dir / HANDSHAKE_DIR, run_dir / "logs" / "locust.log")
                launched = time.time()
            lead = self.lead_s + NODE_LEAD_S * (len(nodes) - 1)
            if run.spec and run.spec.start_s:  # a lead learned from a suite run knows nothing of the peer's start
                lead = max(lead, scale.lead_s + run.spec.start_s)
            start_at = aligned_start(time.time(), lead, run.policy.window_s)
            info["start_at"] = start_at
            if not endpoint:
                config = (peer_downstream_config if run.peer else target_config)(run, self.campaign, start_at, run_dir)
                configs = node_configs(config, nodes, admin_ports, run_dir)
            plan = LivePlan(run.scenario.name, run.policy.limit, run.policy.window_s, self.campaign.seed, start_at,
                            hosts, str(run_dir / HANDSHAKE_DIR), self.workers, str_params(run.scenario.params),
                            routing=run.routing, joins_s=list(run.joins_s))
            plan.save(run_dir / PLAN_FILE)
            arrivals = plan.arrivals()
            last_t = max(arrivals.t[-1] if len(arrivals) else 0.0, model.horizon_s())  # follow-ups too
            end_at = start_at + last_t + scale.drain_s
            events = [] if outage is None else [(start_at + t, name) for t, name in zip(outage(), ("stop", "start"))]
            info.update(planned_requests=len(arrivals), end_at=end_at, phases=self._phases(run, start_at, end_at),
                        nodes=nodes, routing=run.routing, joins_s=list(run.joins_s))
            # Locust imports for seconds: start it first, the targets meanwhile; all are
            # ready before start_at, or the late groups say so
            if not self.remote:
                launched = time.time()
                locust = self._start_locust(plan, run_dir, math.ceil(end_at - time.time()) + SAFETY_S)
                if cores:
                    cpus.pin(locust.pid, cores.generator)  # before it forks its workers: they inherit it
                sampler.watch("locust", ROLE_GENERATOR, locust.pid)
            targets = [] if endpoint else self.processes.start_targets(configs, ports, admin_ports, logs, env)
            if run.peer and not endpoint:  # the suite's target is the peer's downstream; the peer answers the load
                sampler.watch("target:downstream", ROLE_TARGET, targets[0].pid)
                assert peer_port is not None
                live = live_peer(run.peer)
                peer_env = {**os.environ, "REDIS_URL": self.redis_url()} if live.spec.uses_redis else None
                peer = live.start(self.processes, run.policy, port=peer_port, downstream_port=ports[0], run_dir=run_dir,
                                  env=peer_env)
                targets = [peer, *targets]
            for node, target in zip(nodes, targets):
                sampler.watch(f"target:{node}", ROLE_TARGET, target.pid)
            if cores:  # started and ready: their processes (a node's N, nginx's workers) all exist
                for target in targets:  # a peer's downstream too
                    cpus.pin(target.pid, cores.targets)
            sampler.start()
            happened = self._wait(locust, targets, end_at, logs / "locust.log", events, counters=run.peer is None)
            self._learn_lead(run_dir / HANDSHAKE_DIR, launched)
            if run.peer:  # the load is over: what the peer tells a client it refuses
                info["response"] = self._response(run, endpoint, endpoint.url if endpoint else targets[0].url)
            for target in targets:
                self.processes.stop_target(target)
            if endpoint:  # decided client-side: from the client log, uncertain by each request's round trip
                info.update(gather_client(run_dir, plan, landing=False))  # it keeps no arrival times for us
                client = pq.read_table(run_dir / CLIENT_FILE)
                decided = client_decisions(client, arrivals, endpoint)
                info.update(decided_from=DECIDED_BY_CLIENT, round_trip_ms=round_trip_ms(client))
            elif run.peer:  # its decisions (and the counters it has no endpoint for) from its own records
                decided = without_probe(live_peer(run.peer).decisions(logs, store=run.store))
            if run.peer:
                write_parquet(run_dir / DECISIONS_FILE, decided)
                rejected = decided.num_rows - sum(decided.column("allowed").to_pylist())
                self.events.counted({"limits": {run.peer: {"decisions": decided.num_rows, "rejections": rejected}}})
            else:
                merge_decisions(run_dir, nodes, targets)
            if self.remote:
                info.update(remote_clocks(run_dir / HANDSHAKE_DIR, self.workers))
            if not endpoint:
                info.update(gather_client(run_dir, plan))
            info.update(self._measures(run, model, run_dir, happened, info))
            info["status"] = RUN_OK
        except RunFailed as exc:
            info["error"] = str(exc)
        except Interrupted:
            info["status"] = RUN_INTERRUPTED
            raise
        finally:
            with interrupts_deferred():  # the run is recorded whatever signal comes meanwhile
                self.processes.stop_all()
                rows = measured_window(sampler.stop(), info, sampler.interval_s)
                write_text(run_dir / CPU_FILE, cpu_csv(rows))
                info["generator_bound"] = generator_bound(pd.DataFrame(rows, columns=CPU_COLUMNS), info.get("late_share"))
                write_run_json(run_dir / RUN_FILE, info)
        return info

    def _response(self, run: LiveRun, endpoint: UrlPeer | None, url: str) -> dict[str, Any]:
        """run.json's ``response``: the peer's refusal as a client reads it, and the config lines
        that fix what it does not say (the report shows them; a url peer's config is the user's)."""
        assert run.peer is not None
        refused = frozenset(endpoint.entry.reject_status) if endpoint else frozenset({429})
        try:
            found = refusal(url, int(2 * run.policy.effective_burst) + REFUSAL_MARGIN, refused=refused)
        except httpx.HTTPError as exc:
            return {"error": f"the refusal could not be read: {exc!r}"}
        return found.report(None if endpoint else live_peer(run.peer).response_fix(run.policy), refused)

    def _measures(self, run: LiveRun, model: Any, run_dir: Path, happened: dict[str, float],
                  info: dict[str, Any]) -> dict[str, Any]:
        """Fleet measures for a multi-node run, outage measures (and phase) for a store failure."""
        decisions = pq.read_table(run_dir / DECISIONS_FILE).to_pandas()
        out: dict[str, Any] = {"degraded": store_degradation(decisions)}
        if len(run.joins_s) > 1:
            out["fleet"] = fleet_measures(decisions, run.policy.limit, run.policy.window_s,
                                          [info["start_at"] + j for j in run.joins_s], run.routing)
        if "stop" in happened and "start" in happened:
            window = (happened["stop"], happened["start"])
            info["phases"] = [*info.get("phases", []), {"name": "outage", "start_t": window[0], "end_t": window[1]}]
            client = pq.read_table(run_dir / CLIENT_FILE, columns=["status"]).to_pandas()
            out["store_failure"] = store_failure_measures(decisions, client, *window, run.policy.limit / len(run.joins_s),
                                                          run.policy.window_s)
        return out

    def _phases(self, run: LiveRun, start_at: float, end_at: float) -> list[dict[str, Any]]:
        """The downstream's unhealthy phases of the model's health schedule, in epoch seconds:
        ``degraded`` (unhealthy_downstream) and ``downstream_outage`` (a retry storm's 503s); and
        a ramp's span (``ramp``), the offered rate's time axis."""
        schedule = (run.model.target_config().get("downstream") or {}).get("schedule") or []
        names = {"degraded": DEGRADED_PHASE, "outage": DOWNSTREAM_OUTAGE_PHASE}
        phases = []
        for phase, following in zip(schedule, [*schedule[1:], None]):
            if phase["health"] in names:
                end = end_at if following is None else start_at + following["at_s"]
                phases.append({"name": names[phase["health"]], "start_t": start_at + phase["at_s"], "end_t": end})
        ramp = getattr(run.model, "ramp", None)
        if ramp is not None:
            begin, finish = ramp()
            phases.append({"name": RAMP_PHASE, "start_t": start_at + begin, "end_t": start_at + finish})
        return phases

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
        local = ["--processes", str(self.workers)] if self.workers > 1 else []
        return self._locust(run_dir, run_time, plan.hosts[0], plan.user_class, *local)

    def _start_master(self, run: LiveRun, run_dir: Path, host: str) -> subprocess.Popen:
        """A Locust master on the campaign's fixed port for the remote workers; it sends them the
        plan once the harness has written it and writes what they send back into the run folder."""
        assert self.remote is not None
        model, scale = run.model, self.campaign.scale
        last_t = max([*model.arrivals().t[-1:], model.horizon_s()])
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

    def _wait(self, locust: subprocess.Popen, targets: list[TargetProcess], end_at: float, log: Path,
              events: list[tuple[float, str]], counters: bool = True) -> dict[str, float]:
        """Until the plan is over, running the scenario's store events on time (``stop``/``start``
        of our own Redis); then SIGTERM to the Locust master, which stops its workers and lets
        every worker write its client log. Returns when each event really happened."""
        pending = sorted(events)
        happened: dict[str, float] = {}
        with httpx.Client(timeout=0.5) as http:
            while time.time() < end_at:
                while pending and time.time() >= pending[0][0]:
                    _, action = pending.pop(0)
                    assert self.redis is not None
                    self.redis.stop() if action == "stop" else self.redis.start()
                    happened[action] = time.time()
                if locust.poll() is not None:
                    raise RunFailed(f"locust exited early with {locust.returncode}:\n{tail(log)}")
                for target in targets:
                    if target.process.poll() is not None:
                        raise RunFailed(f"a target died (exit {target.process.returncode}):\n{tail(target.stderr_path)}")
                if counters and self.events.wants_counters:  # a peer has no /_bench/counters
                    with suppress(httpx.HTTPError, ValueError, KeyError):
                        self.events.counted(http.get(f"{targets[0].admin_url}/_bench/counters").json())
                next_t = min([end_at, *(t for t, _ in pending)])
                time.sleep(min(0.5, max(0.0, next_t - time.time())))
        with suppress(ProcessLookupError):
            locust.send_signal(signal.SIGTERM)
        try:
            locust.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise RunFailed(f"locust did not stop within {STOP_TIMEOUT_S:.0f} s:\n{tail(log)}") from None
        return happened

    def _learn_lead(self, client_dir: Path, launched: float) -> None:
        """The next run's lead: the slowest worker's start-up here plus a margin."""
        ready = slowest_ready(client_dir)
        if ready is not None:
            self.lead_s = max(self.campaign.scale.lead_s, ready - launched + LEAD_MARGIN_S)

    def run_all(self, runs: list[LiveRun]) -> list[dict[str, Any]]:
        root = self.folder.root
        root.mkdir(parents=True, exist_ok=True)
        config = self.campaign.model_dump(mode="json")
        config.update(workers=self.workers, runs=[r.name for r in runs], machine=machine_facts(), created=utc_stamp())
        write_text(root / CAMPAIGN_FILE, yaml.safe_dump(redacted(config), sort_keys=False))
        results = []
        self.last_run = runs[-1].name if runs else None
        try:
            with signals_interrupt():
                for i, run in enumerate(runs, 1):
                    self.events.started(i, len(runs), run)
                    info = self.execute(run)
                    info["virtual_over_admission"] = self._virtual(run)
                    write_run_json(self.folder.run_dir(run.name) / RUN_FILE, info)
                    results.append(info)
                    self.events.done(i, len(runs), run, info)
        finally:
            self.close()
        return results

    def _virtual(self, run: LiveRun) -> float | None:
        """The same scenario in virtual time, for the live-vs-simulated comparison."""
        if run.algorithm == "adaptive" or run.scenario.name not in SCENARIOS:
            return None
        from analysis.metrics import over_admission

        if run.spec:  # the peer's mapped model (harness/campaign/peers/); a url peer claiming nothing has none
            twin = run.spec.twin(run.policy)
            if twin is None:
                return None
            table, _ = simulate(run.model, twin[0], twin[1], run.params)
            return round(over_admission(table.to_pandas(), run.policy.limit, run.policy.window_s), 6)

        local = {"redis-local": "local", "redis-local-split": "local_split"}.get(run.store, "shared")
        fleet = Fleet(tuple(run.joins_s), run.routing, local) if len(run.joins_s) > 1 else None
        if run.limiters == "per-process":  # one node's N local limiters; the kernel spreads its connections
            fleet = Fleet((0.0,) * run.processes * len(run.joins_s), "round_robin", "local")
        table, _ = simulate(run.model, run.algorithm, run.policy, run.params, fleet=fleet)
        return round(over_admission(table.to_pandas(), run.policy.limit, run.policy.window_s), 6)
