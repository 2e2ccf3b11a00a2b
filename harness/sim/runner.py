"""Plan and run simulation campaigns: validate everything first (nothing is written for bad
input), then replay each scenario x algorithm and write the results folder."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from analysis.metrics import summarize
from analysis.retries import retry_measures
from contract.atomic import write_text
from contract.folder import ResultsFolder, utc_stamp, write_parquet
from contract.machine import machine_facts
from contract.schema import CAMPAIGN_FILE, DECISIONS_FILE, run_dir_name
from harness.campaign.simulate import SimCampaign
from harness.events import RunnerEvents
from scenarios import SCENARIOS, ScenarioError, TraceFile, TrafficModel, build_model
from targets.algorithms import ALGORITHMS, Policy, PolicyError, build_params, get_algorithm

from .simulator import STORE, Replay, ideal_decisions, simulate, virtual_arrivals


@dataclass
class SimRun:
    scenario: str
    algorithm: str
    model: TrafficModel
    params: Any


@dataclass
class SimPlan:
    name: str
    seed: int
    policy: Policy
    runs: list[SimRun]
    config: dict[str, Any] = field(default_factory=dict)


def _split_scoped(pairs: Iterable[tuple[str, str]], scopes: Iterable[str]) -> dict[str | None, dict[str, str]]:
    """``KEY=VALUE`` applies to every scope that has KEY; ``SCOPE.KEY=VALUE`` to one scope."""
    scopes = set(scopes)
    out: dict[str | None, dict[str, str]] = {}
    for key, value in pairs:
        scope, dot, rest = key.partition(".")
        if dot and scope in scopes:
            out.setdefault(scope, {})[rest] = value
        else:
            out.setdefault(None, {})[key] = value
    return out


def _params_for(algorithm: str, policy: Policy, scoped: dict[str | None, dict[str, str]]) -> Any:
    base = get_algorithm(algorithm).params_from_policy(policy)
    names = {f.name for f in fields(base)}
    overrides = {k: v for k, v in scoped.get(None, {}).items() if k in names}
    overrides.update(scoped.get(algorithm, {}))
    return build_params(algorithm, policy, overrides)


def _check_unused(kind: str, scoped: dict[str | None, dict[str, str]], valid: dict[str, set[str]]) -> None:
    for key in scoped.get(None, {}):
        if not any(key in names for names in valid.values()):
            choices = "; ".join(f"{n}: {', '.join(sorted(v)) or '-'}" for n, v in valid.items())
            raise PolicyError(f"unknown {kind} {key!r} for the selected runs; valid: {choices}")


def make_plan(
    *,
    name: str,
    policy: Policy,
    algorithms: list[str],
    scenarios: list[str],
    traces: list[str],
    algorithm_params: list[tuple[str, str]],
    scenario_params: list[tuple[str, str]],
    seed: int,
) -> SimPlan:
    """Build and validate every run; raises PolicyError/ScenarioError naming the problem."""
    if not scenarios and not traces:
        raise ScenarioError(f"give --scenario NAME or --trace FILE; scenarios: {', '.join(SCENARIOS)}")
    algorithms = list(ALGORITHMS) if not algorithms or "all" in algorithms else algorithms
    for a in algorithms:
        get_algorithm(a)
    for s in scenarios:
        if s not in SCENARIOS:
            raise ScenarioError(f"unknown scenario {s!r}; choose from: {', '.join(SCENARIOS)}")
    a_scoped = _split_scoped(algorithm_params, algorithms)
    _check_unused("--param", a_scoped, {
        a: {f.name for f in fields(get_algorithm(a).params_from_policy(policy))} for a in algorithms})
    s_scoped = _split_scoped(scenario_params, scenarios)
    _check_unused("--scenario-param", s_scoped, {
        s: {f.name for f in fields(SCENARIOS[s].params)} for s in scenarios})
    params = {a: _params_for(a, policy, a_scoped) for a in algorithms}
    models: list[tuple[str, TrafficModel]] = []
    for s in scenarios:
        names = {f.name for f in fields(SCENARIOS[s].params)}
        overrides = {k: v for k, v in s_scoped.get(None, {}).items() if k in names}
        overrides.update(s_scoped.get(s, {}))
        models.append((s, build_model(s, policy.limit, policy.window_s, seed, overrides)))
    models.extend((m.name, m) for m in (TraceFile(path) for path in traces))
    runs = []
    for scenario, model in models:
        for a in algorithms:
            most = get_algorithm(a).max_cost(params[a])
            if model.max_cost > most:
                raise PolicyError(
                    f"scenario {scenario} sends requests of cost {model.max_cost:g} but {a} can never admit more than "
                    f"{most:g} at once; raise --burst/--limit or lower the cost")
            runs.append(SimRun(scenario, a, model, params[a]))
    config = {
        "name": name, "seed": seed, "policy": asdict(policy), "algorithms": algorithms,
        "scenarios": scenarios, "traces": traces,
        "params": {a: asdict(p) for a, p in params.items()},
        "scenario_params": {s: asdict(m.p) for s, m in models if hasattr(m, "p")},
    }
    return SimPlan(name, seed, policy, runs, config)


def plan_from_campaign(campaign: SimCampaign) -> SimPlan:
    pol = campaign.policy
    algorithm_params = [(f"{a}.{k}", str(v)) for a, kv in campaign.params.items() for k, v in kv.items()]
    scenario_params = [(f"{s.name}.{k}", str(v)) for s in campaign.scenarios for k, v in s.params.items()]
    for a in campaign.params:
        get_algorithm(a)
    return make_plan(
        name=campaign.name, policy=Policy(pol.limit, pol.window_s, pol.burst),
        algorithms=campaign.algorithms, scenarios=[s.name for s in campaign.scenarios], traces=[],
        algorithm_params=algorithm_params, scenario_params=scenario_params, seed=campaign.seed,
    )


def attempt_log(result: Replay) -> pd.DataFrame:
    """A closed-loop replay as client-log attempts, sent and done at their virtual time, 200 if
    admitted (503 if admitted during a downstream outage) else 429. A client's attempt 1 starts
    a new logical request; its retries follow."""
    a = result.arrivals
    failed = result.unavailable or [False] * len(a)
    status = [(503 if down else 200) if ok else 429 for ok, down in zip(result.allowed, failed)]
    frame = pd.DataFrame({"client_id": a.client_id, "attempt": a.attempt, "sent_t": a.t, "done_t": a.t,
                          "status": status})
    seq = (frame["attempt"] == 1).groupby(frame["client_id"]).cumsum()
    return frame.assign(request_id=frame["client_id"] + "#" + seq.astype(str)).drop(columns="client_id")


def execute(plan: SimPlan, out: Path | None, events: RunnerEvents[SimRun] | None = None) -> list[dict]:
    """Run every planned run; with ``out``, write the results folder as it goes."""
    folder = ResultsFolder(out) if out is not None else None
    if folder is not None:
        config = dict(plan.config, machine=machine_facts(), created=utc_stamp())
        write_text(out / CAMPAIGN_FILE, yaml.safe_dump(config, sort_keys=False))
    rows: list[dict] = []
    ideals: dict[int, list[bool]] = {}  # open-loop arrivals do not depend on the algorithm
    for i, run in enumerate(plan.runs, 1):
        started = time.perf_counter()
        if not run.model.reactive and id(run.model) not in ideals:
            ideals[id(run.model)] = ideal_decisions(virtual_arrivals(run.model), plan.policy)
        table, result = simulate(run.model, run.algorithm, plan.policy, run.params, ideal=ideals.get(id(run.model)))
        row: dict[str, Any] = {
            "scenario": run.scenario,
            "algorithm": run.algorithm,
            "store": STORE,
            "limit": plan.policy.limit,
            "window_s": plan.policy.window_s,
            "burst": plan.policy.effective_burst,
            "params": asdict(run.params),
        }
        row.update(summarize(table.to_pandas(), plan.policy.limit, plan.policy.window_s))
        if result.arrivals.attempt is not None:
            row.update(retry_measures(attempt_log(result)))
        row["evicted_keys"] = result.evictions
        row["wall_s"] = round(time.perf_counter() - started, 3)
        if folder is not None:
            write_parquet(folder.run_dir(run_dir_name(run.scenario, run.algorithm, STORE)) / DECISIONS_FILE, table)
        rows.append(row)
        if events is not None:
            events.done(i, len(plan.runs), run, row)
    if folder is not None:
        folder.write_summary(rows)
    return rows
