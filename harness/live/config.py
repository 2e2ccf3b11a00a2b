"""The config a live run's targets start from (targets.config.TargetConfig): the run's algorithm
and policy on exactly the routes its scenario calls, the downstream and its health schedule, the
store (memory, or Redis in the run's mode), the decision log; then the model's own target
settings merged in (e.g. its downstream schedule) and the campaign entry's on top."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contract.schema import DECISIONS_FILE
from harness.campaign.live import Campaign
from scenarios import build_model
from scenarios.live_plan import ROUTES
from targets.config import ROUTE_PATHS

if TYPE_CHECKING:
    from .runner import LiveRun


def target_config(run: LiveRun, campaign: Campaign, start_at: float, run_dir: Path) -> dict[str, Any]:
    """The target's config file for one run (targets.config.TargetConfig)."""
    downstream: dict[str, Any] = {
        "concurrency": campaign.downstream.concurrency,
        "service_time": {"median_ms": campaign.downstream.median_ms, "sigma": campaign.downstream.sigma},
        "start_at": start_at,
        "seed": campaign.seed,
    }
    model = build_model(run.scenario.name, run.policy.limit, run.policy.window_s, campaign.seed, str_params(run.scenario.params))
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
        "store": store_config(run, campaign, start_at),
        "decision_log": {"path": str(run_dir / DECISIONS_FILE)},
        "node": "node-1",
    }
    return {**_merged(config, model.target_config()), **run.scenario.target}


def _merged(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """``top`` over ``base``, mappings merged key by key (a model's downstream schedule keeps the
    campaign's concurrency and the shared start time)."""
    out = dict(base)
    for key, value in top.items():
        out[key] = _merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def store_config(run: LiveRun, campaign: Campaign, start_at: float) -> dict[str, Any]:
    """The target's ``store``: memory, or redis in the run's mode with its keys under a namespace
    of this run's own (runs never see each other's state, even on a Redis that is not ours).
    The URL reaches the targets as REDIS_URL."""
    mode = campaign.redis_mode(run.store)
    if mode is None:
        return {"name": "memory"}
    r = campaign.redis
    return {"name": "redis", "mode": mode, "split": run.store.endswith("-split"), "nodes": len(run.joins_s),
            "batch": r.batch, "timeout_s": r.timeout_s, "retry_s": r.retry_s, "fail_open": r.fail_open,
            "namespace": f"rb{start_at * 1000:.0f}"}


def str_params(params: dict[str, Any]) -> dict[str, str]:
    return {k: str(v) for k, v in params.items()}
