"""The config a live run's targets start from (targets.config.TargetConfig): the run's algorithm
and policy on exactly the routes its scenario calls, the downstream and its health schedule, the
store (memory, or Redis in the run's mode), the decision log; then the model's own target
settings merged in (e.g. its downstream schedule) and the campaign entry's on top."""

from __future__ import annotations

from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import yaml

from contract.atomic import write_text
from contract.routes import TARGET_ROUTES
from contract.schema import DECISIONS_FILE, GATEWAY_LIMIT
from contract.stores import StoreChoice
from harness.campaign.config_file import GATEWAY_ALGORITHM, GUARDED_LIMIT
from harness.campaign.live import Campaign
from targets.algorithms import build_params, get_algorithm
from targets.config import deep_merge

from .plan import LiveRun, SuiteLimiter


def target_config(run: LiveRun, campaign: Campaign, start_at: float, run_dir: Path) -> dict[str, Any]:
    """The target's config file for one run (targets.config.TargetConfig)."""
    downstream: dict[str, Any] = {
        "concurrency": campaign.downstream.concurrency,
        "service_time": {"median_ms": campaign.downstream.median_ms, "sigma": campaign.downstream.sigma},
        "start_at": start_at,
        "seed": campaign.seed,
    }
    model = run.model
    # one limit on exactly the routes the scenario calls (a route it never calls must not make
    # the config invalid, e.g. a cost-20 report under a burst of 10); adaptive guards the
    # downstream as a whole, every other algorithm limits per client key
    routes = sorted({TARGET_ROUTES[r] for r in set(model.arrivals().route) if r in TARGET_ROUTES})
    algorithm = run.suite.algorithm
    adaptive = get_algorithm(algorithm).scope == "global"
    limit = {
        "name": GUARDED_LIMIT if adaptive else "per-client",
        "scope": "global" if adaptive else "client",
        "routes": routes or ["items"],
        "algorithm": algorithm,
        "limit": run.policy.limit,
        "window_s": run.policy.window_s,
        "burst": run.policy.burst,
        "params": asdict(run.params),
    }
    config = {
        "algorithm": algorithm,
        "limit": run.policy.limit,
        "window_s": run.policy.window_s,
        "limits": [*_gateway(run, routes), limit],
        "downstream": downstream,
        "store": store_config(run, campaign, start_at),
        "decision_log": {"path": str(run_dir / DECISIONS_FILE)},
        "node": "node-1",
        "processes": run.processes,
    }
    # a model's downstream schedule keeps the campaign's concurrency and the shared start time
    return {**deep_merge(config, model.target_config()), **run.scenario.target}


def _gateway(run: LiveRun, routes: list[str]) -> list[dict[str, Any]]:
    """The entry's gateway bucket as the target's first layer (checked before the limiter behind
    it, both committed only when both admit: targets/layers.py), or nothing."""
    gateway = run.scenario.gateway
    if gateway is None:
        return []
    return [{"name": GATEWAY_LIMIT, "scope": "global", "routes": routes or ["items"], "algorithm": GATEWAY_ALGORITHM,
             "limit": gateway.rate, "window_s": 1.0, "burst": gateway.burst}]


DOWNSTREAM_DECISIONS = "downstream-decisions.parquet"
"""A peer run's downstream (a ``none`` target) logs here, under logs/: the peer's log is the run's."""


def peer_downstream_config(run: LiveRun, campaign: Campaign, start_at: float, run_dir: Path) -> dict[str, Any]:
    """What a peer proxies to: a suite target with the ``none`` algorithm and the campaign's
    downstream (and the model's schedule), so latency scenarios mean the same behind a peer."""
    twin = replace(run, limiter=SuiteLimiter("none", StoreChoice()), params=build_params("none", run.policy))
    config = target_config(twin, campaign, start_at, run_dir)
    return {**config, "decision_log": {"path": str(run_dir / "logs" / DOWNSTREAM_DECISIONS)}}


def store_config(run: LiveRun, campaign: Campaign, start_at: float) -> dict[str, Any]:
    """The target's ``store``: memory, or redis in the run's mode with its keys under a namespace
    of this run's own (runs never see each other's state, even on a Redis that is not ours).
    The URL reaches the targets as REDIS_URL."""
    choice = run.suite.store.resolved(campaign.redis.mode)
    if choice.mode is None:
        return {"name": "memory"}
    r = campaign.redis
    return {"name": "redis", "mode": choice.mode, "split": choice.split, "nodes": len(run.joins_s),
            "batch": r.batch, "timeout_s": r.timeout_s, "retry_s": r.retry_s, "fail_open": r.fail_open,
            "namespace": f"rb{start_at * 1000:.0f}"}


def node_configs(config: dict[str, Any], nodes: list[str], admin_ports: list[int], run_dir: Path) -> list[Path]:
    """One config file per node (``target.yaml`` for node-1, ``target-<node>.yaml`` for the
    others), naming its admin port; with several nodes each writes ``decisions-<node>.parquet``."""
    paths = []
    for node, admin_port in zip(nodes, admin_ports):
        mine = {**config, "admin_port": admin_port}
        if len(nodes) > 1:
            mine.update(node=node, decision_log={"path": str(run_dir / f"decisions-{node}.parquet")})
        path = run_dir / ("target.yaml" if node == "node-1" else f"target-{node}.yaml")
        write_text(path, yaml.safe_dump(mine))
        paths.append(path)
    return paths
