"""``run_bench.py run``: drive a live campaign end to end.

Per run: start the target (its own process group), write the plan, start Locust headless (its
own process group; master/worker mode with N forked workers when N > 1), sample every process's
CPU, wait, stop the target with SIGTERM (it flushes its decision log), then gather the client
logs and write run.json. Every file is written atomically; a run that fails keeps its partial
files and is marked failed with its log's tail, and the campaign goes on. SIGINT/SIGTERM stop
every child at once, mark the run interrupted and keep the finished ones.
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
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from analysis.schema import (
    CLIENT_FILE,
    CLIENT_SCHEMA,
    CPU_FILE,
    DECISIONS_FILE,
    LOCUST_DIR,
    ROLE_GENERATOR,
    ROLE_TARGET,
    RUN_FAILED,
    RUN_FILE,
    RUN_INTERRUPTED,
    RUN_OK,
    run_dir_name,
)
from scenarios import SCENARIOS, build_model
from scenarios.live_plan import ROUTES, LivePlan, aligned_start, groups, worker_share
from scenarios.unhealthy_downstream import Params as UnhealthyParams
from targets.algorithms import Policy
from targets.config import ROUTE_PATHS
from targets.process import HOST, TargetError, TargetProcess, free_port, start_target

from .campaign import Campaign, LiveScenario
from .cpu_sampler import CpuSampler, cpu_csv
from .machine import machine_facts
from .results import ResultsFolder, utc_stamp, write_parquet, write_text
from .simulator import simulate

ROOT = Path(__file__).resolve().parent.parent
LOCUSTFILE = ROOT / "scenarios" / "locustfile.py"
GENERATOR_BOUND_CPU = 90.0
"""A Locust process whose median CPU is at least this (% of one core) was the bottleneck."""
LATE_SHARE_BOUND = 0.05
"""More than this share of groups released late also means the generator could not keep up."""


FIRST_LEAD_S = 5.0
"""The first run's lead: Locust's start-up is unknown until it has been measured once."""
LEAD_MARGIN_S = 0.75
SAFETY_S = 30
"""Locust's own --run-time is a safety net this far beyond the plan; the harness stops it."""
STOP_TIMEOUT_S = 30.0


class Interrupted(Exception):
    """SIGINT or SIGTERM arrived during a campaign."""


@dataclass
class LiveRun:
    scenario: LiveScenario
    algorithm: str
    store: str
    policy: Policy
    params: Any

    @property
    def name(self) -> str:
        return run_dir_name(self.scenario.name, self.algorithm, self.store)


def plan_runs(campaign: Campaign, only: list[str] | None = None, store: str | None = None) -> list[LiveRun]:
    runs = []
    for sc in campaign.scenarios:
        policy = campaign.policy_for(sc)
        for algorithm in campaign.algorithms_for(sc):
            for st in [store] if store else campaign.stores:
                if only and sc.name not in only and algorithm not in only:
                    continue
                runs.append(LiveRun(sc, algorithm, st, policy, campaign.params_for(algorithm, policy)))
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


def target_config(run: LiveRun, campaign: Campaign, start_at: float, run_dir: Path) -> dict[str, Any]:
    """The target's config file for one run (targets.config.TargetConfig)."""
    downstream: dict[str, Any] = {
        "concurrency": campaign.downstream.concurrency,
        "service_time": {"median_ms": campaign.downstream.median_ms, "sigma": campaign.downstream.sigma},
        "start_at": start_at,
        "seed": campaign.seed,
    }
    model = build_model(run.scenario.name, run.policy.limit, run.policy.window_s, campaign.seed, _str(run.scenario.params))
    if isinstance(getattr(model, "p", None), UnhealthyParams):
        downstream["schedule"] = model.p.schedule()
    # one limit on exactly the routes the scenario calls (a route it never calls must not make
    # the config invalid, e.g. a cost-20 report under a burst of 10); adaptive guards the
    # downstream as a whole, every other algorithm limits per client key
    by_path = {method_path: name for name, method_path in ROUTE_PATHS.items()}
    routes = sorted({by_path[ROUTES[r]] for r in set(model.arrivals().route) if r in ROUTES})
    adaptive = run.algorithm == "adaptive"
    limit = {
        "name": "adaptive" if adaptive else "per-client",
        "scope": "global" if adaptive else "client",
        "routes": routes or ["items"],
        "algorithm": run.algorithm,
        "limit": run.policy.limit,
        "window_s": run.policy.window_s,
        "burst": run.policy.burst,
        "params": asdict(run.params),
    }
    config = {
        "algorithm": run.algorithm,
        "limit": run.policy.limit,
        "window_s": run.policy.window_s,
        "limits": [limit],
        "downstream": downstream,
        "decision_log": {"path": str(run_dir / DECISIONS_FILE)},
        "node": "node-1",
    }
    return {**config, **run.scenario.target}


def _str(params: dict[str, Any]) -> dict[str, str]:
    return {k: str(v) for k, v in params.items()}


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

    # -- one run ------------------------------------------------------------------------------

    def execute(self, run: LiveRun) -> dict[str, Any]:
        """Run one scenario x algorithm x store; returns its run.json content."""
        run_dir = self.folder.run_dir(run.name)
        logs = run_dir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        scale = self.campaign.scale
        info: dict[str, Any] = {
            "schema": 1, "status": RUN_FAILED, "scenario": run.scenario.name, "algorithm": run.algorithm,
            "store": run.store, "policy": {"limit": run.policy.limit, "window_s": run.policy.window_s,
                                            "burst": run.policy.burst},
            "params": asdict(run.params), "scenario_params": dict(run.scenario.params), "workers": self.workers,
        }
        sampler = CpuSampler()
        try:
            port = free_port()
            url = f"http://{HOST}:{port}"
            start_at = aligned_start(time.time(), self.lead_s, run.policy.window_s)
            info["start_at"] = start_at
            config_path = run_dir / "target.yaml"
            write_text(config_path, yaml.safe_dump(target_config(run, self.campaign, start_at, run_dir)))
            plan = LivePlan(run.scenario.name, run.policy.limit, run.policy.window_s, self.campaign.seed, start_at,
                            [url], str(run_dir / "client"), self.workers, _str(run.scenario.params))
            plan.save(run_dir / "plan.json")
            arrivals = plan.arrivals()
            end_at = start_at + (arrivals.t[-1] if len(arrivals) else 0.0) + scale.drain_s
            info.update(planned_requests=len(arrivals), end_at=end_at, phases=self._phases(run, start_at))
            # Locust imports for seconds: start it first, the target meanwhile; both are
            # ready before start_at, or the late groups say so
            launched = time.time()
            locust = self._start_locust(plan, run_dir, math.ceil(end_at - time.time()) + SAFETY_S)
            sampler.watch("locust", ROLE_GENERATOR, locust.pid)
            try:
                target = start_target(["--config", str(config_path)], log_dir=logs, port=port)
            except TargetError as exc:
                raise RunFailed(f"target did not start: {exc}") from None
            self.targets.append(target)
            sampler.watch("target:node-1", ROLE_TARGET, target.pid)
            sampler.start()
            self._wait(locust, target, end_at, logs / "locust.log")
            self._learn_lead(run_dir / "client", launched)
            target.stop()
            self.targets.remove(target)
            if not (run_dir / DECISIONS_FILE).exists():
                raise RunFailed(f"the target wrote no decision log:\n{_tail(target.stderr_path)}")
            info.update(self._gather(run_dir, plan))
            info["status"] = RUN_OK
        except RunFailed as exc:
            info["error"] = str(exc)
        except Interrupted:
            info["status"] = RUN_INTERRUPTED
            raise
        finally:
            self._stop_children()
            rows = _measured(sampler.stop(), info, sampler.interval_s)
            write_text(run_dir / CPU_FILE, cpu_csv(rows))
            info["generator_bound"] = self._generator_bound(rows, info)
            write_text(run_dir / RUN_FILE, json.dumps(info, indent=2, default=float) + "\n")
        return info

    def _phases(self, run: LiveRun, start_at: float) -> list[dict[str, Any]]:
        model = build_model(run.scenario.name, run.policy.limit, run.policy.window_s, self.campaign.seed,
                            _str(run.scenario.params))
        p = getattr(model, "p", None)
        if isinstance(p, UnhealthyParams):
            return [{"name": "degraded", "start_t": start_at + p.degrade_at_s, "end_t": start_at + p.recover_at_s}]
        return []

    def _start_locust(self, plan: LivePlan, run_dir: Path, run_time: int) -> subprocess.Popen:
        locust_dir = run_dir / LOCUST_DIR
        locust_dir.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless", "--only-summary",
               "-u", str(self.workers), "-r", str(self.workers), "-t", f"{run_time}s", "--stop-timeout", "3",
               "--csv", str(locust_dir / "stats"), "--exit-code-on-error", "0", "--plan", str(run_dir / "plan.json"),
               "--host", plan.hosts[0]]
        if self.workers > 1:
            cmd += ["--processes", str(self.workers)]
        with (run_dir / "logs" / "locust.log").open("wb") as log:
            process = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=ROOT,
                                       start_new_session=True)
        self.children.append(process)
        return process

    def _wait(self, locust: subprocess.Popen, target: TargetProcess, end_at: float, log: Path) -> None:
        """Until the plan is over; then SIGTERM to the Locust master, which stops its workers and
        lets every worker write its client log."""
        with httpx.Client(timeout=0.5) as http:
            while time.time() < end_at:
                if locust.poll() is not None:
                    raise RunFailed(f"locust exited early with {locust.returncode}:\n{_tail(log)}")
                if target.process.poll() is not None:
                    raise RunFailed(f"the target died (exit {target.process.returncode}):\n{_tail(target.stderr_path)}")
                if self.progress is not None:
                    with suppress(httpx.HTTPError, ValueError, KeyError):
                        self.progress(http.get(f"{target.url}/_bench/counters").json())
                time.sleep(min(0.5, max(0.0, end_at - time.time())))
        with suppress(ProcessLookupError):
            locust.send_signal(signal.SIGTERM)
        try:
            locust.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise RunFailed(f"locust did not stop within {STOP_TIMEOUT_S:.0f} s:\n{_tail(log)}") from None

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
            "send_lag_ms": {"p50": _pct(lag, 50), "p99": _pct(lag, 99), "max": _pct(lag, 100)},
        }
        info.update(_burst_spread(run_dir, plan))
        return info

    def _generator_bound(self, rows: list[tuple], info: dict[str, Any]) -> bool | None:
        if not rows:
            return None
        cpu = pd.DataFrame(rows, columns=["t", "process", "role", "cpu", "rss"])
        gen = cpu[cpu["role"] == ROLE_GENERATOR].groupby("process")["cpu"].median()
        return bool((len(gen) and gen.max() >= GENERATOR_BOUND_CPU) or info.get("late_share", 0) > LATE_SHARE_BOUND)

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
        return results

    def _virtual(self, run: LiveRun) -> float | None:
        """The same scenario in virtual time, for the live-vs-simulated comparison."""
        if run.algorithm == "adaptive" or run.scenario.name not in SCENARIOS:
            return None
        from analysis.metrics import over_admission

        model = build_model(run.scenario.name, run.policy.limit, run.policy.window_s, self.campaign.seed,
                            _str(run.scenario.params))
        table, _ = simulate(model, run.algorithm, run.policy, run.params)
        return round(over_admission(table.to_pandas(), run.policy.limit, run.policy.window_s), 6)


def _measured(rows: list[tuple], info: dict[str, Any], interval_s: float) -> list[tuple]:
    """The samples of the measured window (plan start to end, one sample either side): start-up
    (imports, warm-up) is not what a run measures. A run that failed early keeps everything."""
    if "start_at" not in info or "end_at" not in info:
        return rows
    first, last = info["start_at"] - interval_s, info["end_at"] + interval_s
    return [r for r in rows if first <= r[0] <= last]


def _pct(values: np.ndarray, q: float) -> float | None:
    values = values[np.isfinite(values)]
    return round(float(np.percentile(values, q)) * 1000.0, 3) if len(values) else None


def _burst_spread(run_dir: Path, plan: LivePlan) -> dict[str, Any]:
    """For every planned group of 10+ simultaneous requests: how spread their arrivals at the
    target were (decision times, ms) and how far from the deadline they were sent."""
    shots = worker_share(plan.arrivals(), 0, 1)
    big = [g for g in groups(shots, plan.burst_gap_s) if len(g) >= 10]
    if not big:
        return {}
    decisions = pq.read_table(run_dir / DECISIONS_FILE, columns=["t", "request_id"]).to_pandas()
    t_by_id = decisions.groupby("request_id")["t"].min()
    spreads = []
    for g in big:
        ts = t_by_id.reindex([s.headers["x-request-id"] for s in g]).dropna()
        if len(ts) > 1:
            spreads.append((ts.max() - ts.min()) * 1000.0)
    if not spreads:
        return {}
    return {"burst_groups": len(spreads), "burst_size": max(len(g) for g in big),
            "burst_spread_ms": {"median": round(float(np.median(spreads)), 3), "max": round(float(np.max(spreads)), 3)}}
