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

import json
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from analysis.cpu import generator_bound
from contract.folder import ResultsFolder, utc_stamp, write_parquet, write_text
from contract.machine import machine_facts
from contract.schema import (
    CLIENT_FILE,
    CLIENT_SCHEMA,
    CPU_COLUMNS,
    CPU_FILE,
    DECISIONS_FILE,
    DEGRADED_PHASE,
    DOWNSTREAM_OUTAGE_PHASE,
    LOCUST_DIR,
    ROLE_GENERATOR,
    ROLE_TARGET,
    RUN_FAILED,
    RUN_FILE,
    RUN_INTERRUPTED,
    RUN_OK,
    run_dir_name,
)
from harness.campaign.live import Campaign, LiveScenario
from harness.sim.simulator import simulate
from scenarios import SCENARIOS, build_model
from scenarios.fleet import Fleet, fleet_of
from scenarios.live_plan import LivePlan, aligned_start, groups, worker_share
from targets.algorithms import Policy
from targets.process import HOST, TargetError, TargetProcess, free_port, start_target
from targets.stores.redis.server import RedisServer

from .config import str_params, target_config
from .cpu_sampler import CpuSampler, cpu_csv
from .measures import burst_spread, fleet_measures, measured_window, pct_ms, store_failure_measures

ROOT = Path(__file__).resolve().parents[2]
LOCUSTFILE = ROOT / "scenarios" / "locustfile.py"


FIRST_LEAD_S = 5.0
"""The first run's lead: Locust's start-up is unknown until it has been measured once."""
LEAD_MARGIN_S = 0.75
SAFETY_S = 30
"""Locust's own --run-time is a safety net this far beyond the plan; the harness stops it."""
STOP_TIMEOUT_S = 30.0


class Interrupted(Exception):
    """SIGINT or SIGTERM arrived during a campaign."""


NODE_LEAD_S = 0.75
"""Extra lead per node beyond the first: K targets start in parallel on shared cores."""


@dataclass
class LiveRun:
    scenario: LiveScenario
    algorithm: str
    store: str
    """``memory`` or ``redis-<mode>`` (``redis-local-split``: local with L/N per node)."""
    policy: Policy
    params: Any
    joins_s: list[float] = field(default_factory=lambda: [0.0])
    """One entry per target node: the model time from which it takes traffic."""
    routing: str = "round_robin"

    @property
    def name(self) -> str:
        return run_dir_name(self.scenario.run_name, self.algorithm, self.store)

    @property
    def nodes(self) -> list[str]:
        return [f"node-{i + 1}" for i in range(len(self.joins_s))]


def plan_runs(campaign: Campaign, only: list[str] | None = None, store: str | None = None) -> list[LiveRun]:
    """Every scenario x algorithm x store; ``store`` keeps a scenario's entries of that store
    (``redis`` matches every redis mode), or runs it on that store alone when it has none."""
    runs = []
    for sc in campaign.scenarios:
        policy = campaign.policy_for(sc)
        fleet = fleet_of(build_model(sc.name, policy.limit, policy.window_s, campaign.seed, str_params(sc.params)))
        joins = list(fleet.joins_s) if fleet is not None else [0.0] * campaign.nodes
        routing = fleet.routing if fleet is not None else campaign.routing
        stores = [campaign.store_label(st) for st in campaign.stores_for(sc)]
        if store:
            stores = [st for st in stores if st == store or st.startswith(f"{store}-")] or [campaign.store_label(store)]
        for algorithm in campaign.algorithms_for(sc):
            for st in stores:
                if only and sc.name not in only and algorithm not in only:
                    continue
                runs.append(LiveRun(sc, algorithm, st, policy, campaign.params_for(algorithm, policy), joins, routing))
    return runs


@contextmanager
def signals_interrupt() -> Iterator[None]:
    """SIGTERM behaves like Ctrl-C for the duration of a campaign."""
    def handler(signum: int, frame: Any) -> None:
        raise Interrupted(signal.Signals(signum).name)

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


class RunFailed(Exception):
    """A run that could not complete; the message carries the relevant log tail."""


def _tail(path: Path, lines: int = 15) -> str:
    if not path.exists():
        return ""
    return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])


def _stop_group(process: subprocess.Popen, timeout_s: float = 10.0) -> None:
    if process.poll() is None:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        with suppress(subprocess.TimeoutExpired):
            process.wait(timeout_s)
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


class LiveRunner:
    def __init__(self, campaign: Campaign, out: Path, workers: int | None = None, progress: Any = None) -> None:
        self.campaign = campaign
        self.folder = ResultsFolder(out)
        self.workers = workers or campaign.scale.workers
        self.progress = progress
        self.lead_s = max(campaign.scale.lead_s, FIRST_LEAD_S)
        self.children: list[subprocess.Popen] = []
        self.targets: list[TargetProcess] = []
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
        self._stop_children()
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
            "schema": 1, "status": RUN_FAILED, "scenario": run.scenario.run_name, "algorithm": run.algorithm,
            "store": run.store, "policy": {"limit": run.policy.limit, "window_s": run.policy.window_s,
                                            "burst": run.policy.burst},
            "params": asdict(run.params), "scenario_params": dict(run.scenario.params), "workers": self.workers,
        }
        sampler = CpuSampler()
        try:
            nodes = run.nodes
            ports = [free_port() for _ in nodes]
            hosts = [f"http://{HOST}:{port}" for port in ports]
            model = build_model(run.scenario.name, run.policy.limit, run.policy.window_s, self.campaign.seed,
                                str_params(run.scenario.params))
            outage = getattr(model, "outage", None)
            if outage is not None and self.redis_url() and self.redis is None:  # not ours: cannot stop it
                raise RunFailed(f"{run.scenario.name} stops Redis mid-run: it needs the runner's own redis-server "
                                "(unset REDIS_URL and the campaign's redis.url)")
            env = {**os.environ, "REDIS_URL": self.redis_url()} if self.campaign.redis_mode(run.store) not in (None, "local") else None
            start_at = aligned_start(time.time(), self.lead_s + NODE_LEAD_S * (len(nodes) - 1), run.policy.window_s)
            info["start_at"] = start_at
            config = target_config(run, self.campaign, start_at, run_dir)
            configs = self._node_configs(config, nodes, run_dir)
            plan = LivePlan(run.scenario.name, run.policy.limit, run.policy.window_s, self.campaign.seed, start_at,
                            hosts, str(run_dir / "client"), self.workers, str_params(run.scenario.params),
                            routing=run.routing, joins_s=list(run.joins_s))
            plan.save(run_dir / "plan.json")
            arrivals = plan.arrivals()
            last_t = max(arrivals.t[-1] if len(arrivals) else 0.0, plan.model().horizon_s())  # follow-ups too
            end_at = start_at + last_t + scale.drain_s
            events = [] if outage is None else [(start_at + t, name) for t, name in zip(outage(), ("stop", "start"))]
            info.update(planned_requests=len(arrivals), end_at=end_at, phases=self._phases(run, start_at, end_at),
                        nodes=nodes, routing=run.routing, joins_s=list(run.joins_s))
            # Locust imports for seconds: start it first, the targets meanwhile; all are
            # ready before start_at, or the late groups say so
            launched = time.time()
            locust = self._start_locust(plan, run_dir, math.ceil(end_at - time.time()) + SAFETY_S)
            sampler.watch("locust", ROLE_GENERATOR, locust.pid)
            targets = self._start_targets(configs, ports, logs, env)
            for node, target in zip(nodes, targets):
                sampler.watch(f"target:{node}", ROLE_TARGET, target.pid)
            sampler.start()
            happened = self._wait(locust, targets, end_at, logs / "locust.log", events)
            self._learn_lead(run_dir / "client", launched)
            for target in targets:
                target.stop()
                self.targets.remove(target)
            self._merge_decisions(run_dir, nodes, targets)
            info.update(self._gather(run_dir, plan))
            info.update(self._measures(run, model, run_dir, happened, info))
            info["status"] = RUN_OK
        except RunFailed as exc:
            info["error"] = str(exc)
        except Interrupted:
            info["status"] = RUN_INTERRUPTED
            raise
        finally:
            self._stop_children()
            rows = measured_window(sampler.stop(), info, sampler.interval_s)
            write_text(run_dir / CPU_FILE, cpu_csv(rows))
            info["generator_bound"] = generator_bound(pd.DataFrame(rows, columns=CPU_COLUMNS), info.get("late_share"))
            write_text(run_dir / RUN_FILE, json.dumps(info, indent=2, default=float) + "\n")
        return info

    @staticmethod
    def _node_configs(config: dict[str, Any], nodes: list[str], run_dir: Path) -> list[Path]:
        """One config file per node (``target.yaml`` for node-1, ``target-<node>.yaml`` for the
        others); with several nodes each writes ``decisions-<node>.parquet``."""
        paths = []
        for node in nodes:
            mine = dict(config)
            if len(nodes) > 1:
                mine.update(node=node, decision_log={"path": str(run_dir / f"decisions-{node}.parquet")})
            path = run_dir / ("target.yaml" if node == "node-1" else f"target-{node}.yaml")
            write_text(path, yaml.safe_dump(mine))
            paths.append(path)
        return paths

    def _start_targets(self, configs: list[Path], ports: list[int], logs: Path,
                       env: dict[str, str] | None) -> list[TargetProcess]:
        """Every node in parallel (start-up is mostly imports). Each registers itself for
        ``_stop_children`` as soon as it is up, so an interruption meanwhile orphans none."""
        def start(config: Path, port: int) -> TargetProcess:
            target = start_target(["--config", str(config)], log_dir=logs, port=port, env=env)
            self.targets.append(target)
            return target

        with ThreadPoolExecutor(len(configs)) as pool:
            futures = [pool.submit(start, c, p) for c, p in zip(configs, ports)]
            started, errors = [], []
            for f in futures:
                try:
                    started.append(f.result())
                except TargetError as exc:
                    errors.append(exc)
        if errors:
            raise RunFailed(f"target did not start: {errors[0]}")
        return started

    @staticmethod
    def _merge_decisions(run_dir: Path, nodes: list[str], targets: list[TargetProcess]) -> None:
        """The nodes' decision logs, one file in time order (one node writes it directly)."""
        parts = [run_dir / f"decisions-{node}.parquet" for node in nodes] if len(nodes) > 1 else [run_dir / DECISIONS_FILE]
        for part, target in zip(parts, targets):
            if not part.exists():
                raise RunFailed(f"the target wrote no decision log:\n{_tail(target.stderr_path)}")
        if len(parts) > 1:
            table = pa.concat_tables([pq.read_table(p) for p in parts])
            write_parquet(run_dir / DECISIONS_FILE, table.sort_by("t"))
            for part in parts:
                part.unlink()

    def _measures(self, run: LiveRun, model: Any, run_dir: Path, happened: dict[str, float],
                  info: dict[str, Any]) -> dict[str, Any]:
        """Fleet measures for a multi-node run, outage measures (and phase) for a store failure."""
        out: dict[str, Any] = {}
        decisions = pq.read_table(run_dir / DECISIONS_FILE).to_pandas()
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
        ``degraded`` (unhealthy_downstream) and ``downstream_outage`` (a retry storm's 503s)."""
        model = build_model(run.scenario.name, run.policy.limit, run.policy.window_s, self.campaign.seed,
                            str_params(run.scenario.params))
        schedule = (model.target_config().get("downstream") or {}).get("schedule") or []
        names = {"degraded": DEGRADED_PHASE, "outage": DOWNSTREAM_OUTAGE_PHASE}
        phases = []
        for phase, following in zip(schedule, [*schedule[1:], None]):
            if phase["health"] in names:
                end = end_at if following is None else start_at + following["at_s"]
                phases.append({"name": names[phase["health"]], "start_t": start_at + phase["at_s"], "end_t": end})
        return phases

    def _start_locust(self, plan: LivePlan, run_dir: Path, run_time: int) -> subprocess.Popen:
        locust_dir = run_dir / LOCUST_DIR
        locust_dir.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless", "--only-summary",
               "-u", str(self.workers), "-r", str(self.workers), "-t", f"{run_time}s", "--stop-timeout", "3",
               "--csv", str(locust_dir / "stats"), "--exit-code-on-error", "0", "--plan", str(run_dir / "plan.json"),
               "--host", plan.hosts[0], plan.user_class]
        if self.workers > 1:
            cmd += ["--processes", str(self.workers)]
        with (run_dir / "logs" / "locust.log").open("wb") as log:
            process = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=ROOT,
                                       start_new_session=True)
        self.children.append(process)
        return process

    def _wait(self, locust: subprocess.Popen, targets: list[TargetProcess], end_at: float, log: Path,
              events: list[tuple[float, str]]) -> dict[str, float]:
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
                    raise RunFailed(f"locust exited early with {locust.returncode}:\n{_tail(log)}")
                for target in targets:
                    if target.process.poll() is not None:
                        raise RunFailed(f"a target died (exit {target.process.returncode}):\n{_tail(target.stderr_path)}")
                if self.progress is not None:
                    with suppress(httpx.HTTPError, ValueError, KeyError):
                        self.progress(http.get(f"{targets[0].url}/_bench/counters").json())
                next_t = min([end_at, *(t for t, _ in pending)])
                time.sleep(min(0.5, max(0.0, next_t - time.time())))
        with suppress(ProcessLookupError):
            locust.send_signal(signal.SIGTERM)
        try:
            locust.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise RunFailed(f"locust did not stop within {STOP_TIMEOUT_S:.0f} s:\n{_tail(log)}") from None
        return happened

    def _learn_lead(self, client_dir: Path, launched: float) -> None:
        """The next run's lead: the slowest worker's start-up here plus a margin."""
        ready = [float(p.read_text()) for p in client_dir.glob("ready-*")]
        if ready:
            self.lead_s = max(self.campaign.scale.lead_s, max(ready) - launched + LEAD_MARGIN_S)

    def _gather(self, run_dir: Path, plan: LivePlan) -> dict[str, Any]:
        """Merge the workers' client logs; measure how precisely the plan was kept."""
        parts = sorted((run_dir / "client").glob("client-*.parquet"))
        if not parts:
            raise RunFailed(f"Locust wrote no client log:\n{_tail(run_dir / 'logs' / 'locust.log')}")
        client = pa.concat_tables([pq.read_table(p) for p in parts]).cast(CLIENT_SCHEMA)
        write_parquet(run_dir / CLIENT_FILE, client)
        late = sum(int(p.with_suffix(".late").read_text() or 0) for p in parts if p.with_suffix(".late").exists())
        for p in (run_dir / "client").iterdir():  # parts are merged, markers consumed
            p.unlink()
        (run_dir / "client").rmdir()
        df = client.to_pandas()
        lag = (df["sent_t"] - df["intended_t"]).to_numpy()
        n_groups = len(groups(worker_share(plan.arrivals(), 0, 1), plan.burst_gap_s))
        info: dict[str, Any] = {
            "sent": len(df),
            "unanswered": int((df["status"] == 0).sum()),
            "late_groups": late,
            "late_share": late / max(1, n_groups),
            "send_lag_ms": {"p50": pct_ms(lag, 50), "p99": pct_ms(lag, 99), "max": pct_ms(lag, 100)},
        }
        info.update(burst_spread(run_dir, plan))
        return info

    def _stop_children(self) -> None:
        for target in self.targets:
            target.stop()
        self.targets.clear()
        for child in self.children:
            _stop_group(child)
        self.children.clear()

    # -- the campaign -------------------------------------------------------------------------

    def run_all(self, runs: list[LiveRun], on_start: Any = None, on_done: Any = None) -> list[dict[str, Any]]:
        root = self.folder.root
        root.mkdir(parents=True, exist_ok=True)
        config = self.campaign.model_dump(mode="json")
        config.update(workers=self.workers, runs=[r.name for r in runs], machine=machine_facts(), created=utc_stamp())
        write_text(root / "campaign.yaml", yaml.safe_dump(config, sort_keys=False))
        results = []
        try:
            with signals_interrupt():
                for i, run in enumerate(runs, 1):
                    if on_start:
                        on_start(i, len(runs), run)
                    info = self.execute(run)
                    info["virtual_over_admission"] = self._virtual(run)
                    write_text(self.folder.run_dir(run.name) / RUN_FILE, json.dumps(info, indent=2, default=float) + "\n")
                    results.append(info)
                    if on_done:
                        on_done(i, len(runs), run, info)
        finally:
            self.close()
        return results

    def _virtual(self, run: LiveRun) -> float | None:
        """The same scenario in virtual time, for the live-vs-simulated comparison."""
        if run.algorithm == "adaptive" or run.scenario.name not in SCENARIOS:
            return None
        from analysis.metrics import over_admission

        model = build_model(run.scenario.name, run.policy.limit, run.policy.window_s, self.campaign.seed,
                            str_params(run.scenario.params))
        local = {"redis-local": "local", "redis-local-split": "local_split"}.get(run.store, "shared")
        fleet = Fleet(tuple(run.joins_s), run.routing, local) if len(run.joins_s) > 1 else None
        table, _ = simulate(model, run.algorithm, run.policy, run.params, fleet=fleet)
        return round(over_admission(table.to_pandas(), run.policy.limit, run.policy.window_s), 6)
