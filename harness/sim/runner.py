"""Plan and run simulation campaigns: validate everything first (nothing is written for bad
input), then replay each scenario x algorithm and write the results folder."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from analysis import adaptive, ramp
from analysis.latency import admitted_latency, latency_percentiles
from analysis.metrics import summarize
from analysis.retries import retry_measures
from contract.atomic import atomic_write, write_text
from contract.folder import ResultsFolder, finish, partial_path, utc_stamp
from contract.machine import machine_facts
from contract.memory import bound_of, check_fits
from contract.run_info import RunInfo, RunPolicy, RunRecord, run_info_of
from contract.schema import (
    CAMPAIGN_FILE,
    CLIENT_FILE,
    CLIENT_SCHEMA,
    CPU_FILE,
    DECISION_SCHEMA,
    DECISIONS_FILE,
    GATEWAY_LIMIT,
    HEALTH_PHASES,
    KIND_VIRTUAL,
    OVERLOAD_PHASE,
    RAMP_PHASE,
    RUN_FILE,
    RUN_OK,
    SYSTEM_SUITE,
    repeat_dir_name,
    run_dir_name,
)
from harness.campaign.config_file import GATEWAY_ALGORITHM, GUARDED_LIMIT, GatewayConfig
from harness.campaign.log_traffic import LogOptions, trace_model
from harness.campaign.peers import PEERS, SIMULATE_ALIASES, decided_by
from harness.campaign.simulate import SimCampaign
from harness.campaign.system import MAX_VIRTUAL_REQUESTS, REQUEST_BYTES, DownstreamSettings, SystemSettings
from harness.events import RunnerEvents
from scenarios import SCENARIOS, ScenarioError, TrafficModel, build_model
from targets.algorithms import ALGORITHMS, Policy, PolicyError, build_params, get_algorithm

from .gateway_store import Gateway
from .simulator import STORE, Replay, client_parts, client_table, decision_parts, ideal_decisions, simulated, virtual_arrivals
from .system import system_for


@dataclass
class SimRun:
    scenario: str
    """The run's scenario name: the scenario, or ``<scenario>-<label>`` for a labelled entry."""
    algorithm: str
    model: TrafficModel
    params: Any
    policy: Policy
    decides_as: str | None = None
    """The algorithm that decides when ``algorithm`` is a peer's alias (nginx_limit_req: token_bucket)."""
    repeat: int = 1
    repeats: int = 1
    seed: int = 1
    """The seed its model was built from: the plan's, plus the repeat's offset (run.json's ``seed``)."""
    gateway: GatewayConfig | None = None
    """A token bucket in front of the limiter (the entry's ``gateway``)."""

    @property
    def name(self) -> str:
        return repeat_dir_name(run_dir_name(self.scenario, self.algorithm, STORE), self.repeat, self.repeats)

    @property
    def system(self) -> str:
        """Who it predicts: ``suite``, or the peer of an alias (nginx_limit_req: ``nginx``)."""
        alias = SIMULATE_ALIASES.get(self.algorithm)
        return PEERS[alias].system if alias else SYSTEM_SUITE

    @property
    def trace(self) -> str | None:
        """The file a trace run replays (``simulate --trace``), else None."""
        path = getattr(self.model, "path", None) or getattr(getattr(self.model, "traffic", None), "path", None)
        return None if path is None else str(path)

    def identity(self) -> dict[str, Any]:
        """What run.json and campaign.yaml's ``runs`` say of every run: its seed, its repeat (null
        for a run made once), the trace it replayed and the gateway in front of its limiter."""
        return {"seed": self.seed, "repeat": self.repeat if self.repeats > 1 else None, "trace": self.trace,
                "gateway": self.gateway.spelled() if self.gateway else None}

    def gateway_store(self) -> Gateway | None:
        """The simulator's gateway in front of this run's limiter, named as the live target's layers."""
        if self.gateway is None:
            return None
        return Gateway(build_params(GATEWAY_ALGORITHM, self.gateway.policy), (GATEWAY_LIMIT, GUARDED_LIMIT))


@dataclass
class SimPlan:
    name: str
    seed: int
    runs: list[SimRun]
    config: dict[str, Any] = field(default_factory=dict)
    system: SystemSettings = field(default_factory=SystemSettings)
    downstream: DownstreamSettings = field(default_factory=DownstreamSettings)


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


def _params_for(name: str, policy: Policy, scoped: dict[str | None, dict[str, str]]) -> Any:
    algorithm, policy = decided_by(name, policy)
    base = get_algorithm(algorithm).params_from_policy(policy)
    names = {f.name for f in fields(base)}
    overrides = {k: v for k, v in scoped.get(None, {}).items() if k in names}
    overrides.update(scoped.get(name, {}))
    return build_params(algorithm, policy, overrides)


def _check_unused(kind: str, scoped: dict[str | None, dict[str, str]], valid: dict[str, set[str]]) -> None:
    for key in scoped.get(None, {}):
        if not any(key in names for names in valid.values()):
            choices = "; ".join(f"{n}: {', '.join(sorted(v)) or '-'}" for n, v in valid.items())
            raise PolicyError(f"unknown {kind} {key!r} for the selected runs; valid: {choices}")


MAX_SPAN_S = 31 * 86_400
"""Model time one run may span: the target's CPU samples, the analysis's per-second bins and the
downstream's schedule are a row a second (a two-row trace spanning 1e15 s asked for 7 PiB)."""
SPAN_BYTES = 512
"""Bytes a second of model time costs (cpu.csv's row in its frame and text, the analysis's bins)."""


def check_size(scenario: str, model: TrafficModel) -> None:
    """Refuse a run whose model plans more requests than memory holds, before any is generated."""
    expected = model.expected_requests()
    bound = bound_of(MAX_VIRTUAL_REQUESTS, REQUEST_BYTES)
    if not expected <= bound:
        raise ScenarioError(f"scenario {scenario}: about {expected:,.0f} requests planned, beyond a simulated run's memory "
                            f"bound of {bound:,} (the suite's 10,000,000 at ~{REQUEST_BYTES} bytes a request, or half "
                            "this machine's memory); shorten duration_s or lower the rate or the counts")


def _runs_of(scenario: str, model: TrafficModel, policy: Policy, params: dict[str, Any]) -> list[SimRun]:
    """One run per algorithm; a model too large for memory (estimated before it is generated,
    then counted), or a request cost no algorithm could ever admit, is refused."""
    check_size(scenario, model)
    arrivals = model.arrivals()
    count = len(arrivals)
    check_fits(f"scenario {scenario}: requests", count, MAX_VIRTUAL_REQUESTS, REQUEST_BYTES, ScenarioError,
               "shorten duration_s or lower the rate")
    span = max(model.horizon_s(), arrivals.t[-1] - arrivals.t[0] if count else 0.0)
    check_fits(f"scenario {scenario}: seconds of model time spanned", span, MAX_SPAN_S, SPAN_BYTES, ScenarioError,
               "a trace over more than 31 days: replay it in parts")
    for a, p in params.items():
        most = get_algorithm(decided_by(a, policy)[0]).max_cost(p)
        if model.max_cost > most:
            raise PolicyError(
                f"scenario {scenario} sends requests of cost {model.max_cost:g} but {a} can never admit more than "
                f"{most:g} at once; raise --burst/--limit or lower the cost")
    return [SimRun(scenario, a, model, p, policy, decides_as=decided_by(a, policy)[0] if a in SIMULATE_ALIASES else None)
            for a, p in params.items()]


def _config(name: str, seed: int, policy: Policy, runs: list[SimRun], **extra: Any) -> dict[str, Any]:
    """campaign.yaml: the campaign, then each run's policy and parameters by run folder (the
    analysis reads them there: entries of one campaign can differ in both)."""
    return {
        "name": name, "seed": seed, "policy": asdict(policy), **extra,
        "runs": {r.name: {"policy": asdict(r.policy), "params": asdict(r.params), "system": r.system,
                          "scenario_params": asdict(r.model.p) if hasattr(r.model, "p") else {}, **r.identity()}
                 for r in runs},
    }


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
    repeats: int = 1,
    system: SystemSettings | None = None,
    downstream: DownstreamSettings | None = None,
    log: LogOptions | None = None,
) -> SimPlan:
    """The command line's plan (``--scenario``, ``--trace``, ``--param``, ``--scenario-param``);
    raises PolicyError/ScenarioError naming the problem."""
    if not scenarios and not traces:
        raise ScenarioError(f"give --scenario NAME or --trace FILE; scenarios: {', '.join(SCENARIOS)}")
    algorithms = list(ALGORITHMS) if not algorithms or "all" in algorithms else algorithms
    for a in algorithms:
        get_algorithm(decided_by(a, policy)[0])
    for s in scenarios:
        if s not in SCENARIOS:
            raise ScenarioError(f"unknown scenario {s!r}; choose from: {', '.join(SCENARIOS)}")
        if scenarios.count(s) > 1:
            raise ScenarioError(f"--scenario {s} is given twice; to run one scenario with several parameter sets, "
                                "list labelled entries in a campaign file (run_bench.py simulate --campaign FILE)")
    a_scoped = _split_scoped(algorithm_params, algorithms)
    _check_unused("--param", a_scoped, {
        a: {f.name for f in fields(get_algorithm(decided_by(a, policy)[0]).params_from_policy(decided_by(a, policy)[1]))}
        for a in algorithms})
    s_scoped = _split_scoped(scenario_params, scenarios)
    _check_unused("--scenario-param", s_scoped, {
        s: {f.name for f in fields(SCENARIOS[s].params)} for s in scenarios})
    params = {a: _params_for(a, policy, a_scoped) for a in algorithms}
    runs: list[SimRun] = []
    for k in range(1, repeats + 1):  # repeat k at the seed offset k - 1
        models: list[tuple[str, TrafficModel]] = []
        for s in scenarios:
            names = {f.name for f in fields(SCENARIOS[s].params)}
            overrides = {key: v for key, v in s_scoped.get(None, {}).items() if key in names}
            overrides.update(s_scoped.get(s, {}))
            models.append((s, build_model(s, policy.limit, policy.window_s, seed + k - 1, overrides)))
        models.extend((m.name, m) for m in (trace_model(path, log or LogOptions()) for path in traces))
        runs += [replace(run, repeat=k, repeats=repeats, seed=seed + k - 1)
                 for scenario, model in models for run in _runs_of(scenario, model, policy, params)]
    system, downstream = system or SystemSettings(), downstream or DownstreamSettings()
    return SimPlan(name, seed, runs, _config(name, seed, policy, runs, algorithms=algorithms, scenarios=scenarios,
                                             traces=traces, repeats=repeats, system=system.model_dump(),
                                             downstream=downstream.model_dump()),
                   system, downstream)


def plan_from_campaign(campaign: SimCampaign, repeats: int | None = None) -> SimPlan:
    """A campaign file's plan: each entry with its own parameters, policy and algorithms, its
    runs named by the entry (``<scenario>-<label>``), ``repeats`` times (default: the campaign's),
    repeat k at the seed offset k - 1."""
    n = repeats or campaign.repeats
    runs: list[SimRun] = []
    for entry in campaign.scenarios:
        policy = campaign.policy_for(entry)
        params = {a: campaign.params_for(a, policy, entry) for a in campaign.algorithms_for(entry)}
        for k in range(1, n + 1):
            try:
                runs += [replace(r, repeat=k, repeats=n, seed=campaign.seed + k - 1, gateway=entry.gateway)
                         for r in _runs_of(entry.run_name, campaign.model_for(entry, k - 1), policy, params)]
            except PolicyError as exc:
                raise PolicyError(f"{entry.where}: {exc}") from None
    return SimPlan(campaign.name, campaign.seed, runs, _config(
        campaign.name, campaign.seed, campaign.policy_for(), runs, algorithms=campaign.algorithms, repeats=n,
        scenarios=[e.model_dump(exclude_defaults=True) for e in campaign.scenarios],
        system=campaign.system.model_dump(), downstream=campaign.downstream.model_dump()),
        campaign.system, campaign.downstream)


def attempt_log(result: Replay) -> pd.DataFrame:
    """A replay's client log (the system model's: sent and answered in virtual time, 200, 429
    or 503 during a downstream outage) as a frame."""
    return client_table(result).to_pandas()


def _run_record(run: SimRun, result: Replay) -> RunRecord:
    """run.json of a virtual run (``kind: virtual``): what a live run's says, on the model's
    clock: every unhealthy phase of the downstream, a ramp's span and an overload break's window,
    as a live run's (harness/live/measures.py, ``model_phases``)."""
    served = result.served
    end = float(served.done_t.max()) if served is not None and len(served.done_t) else run.model.horizon_s()
    schedule = [(p.at_s, p.health) for p in served.spec.downstream.schedule] if served is not None else []
    phases = [{"name": HEALTH_PHASES[health], "start_t": at, "end_t": following[0] if following else end}
              for (at, health), following in zip(schedule, [*schedule[1:], None]) if health in HEALTH_PHASES]
    for name, span in ((RAMP_PHASE, run.model.ramp()), (OVERLOAD_PHASE, run.model.overload_window())):
        if span is not None:
            phases.append({"name": name, "start_t": span[0], "end_t": span[1]})
    processes = served.spec.processes if served is not None else 1
    record = RunRecord(
        status=RUN_OK, scenario=run.scenario, algorithm=run.algorithm, store=STORE, system=run.system,
        policy={"limit": run.policy.limit, "window_s": run.policy.window_s, "burst": run.policy.burst},
        params=asdict(run.params), scenario_params=asdict(run.model.p) if hasattr(run.model, "p") else {},
        workers=0, processes=processes, limiters="shared" if processes == 1 else "per-process", seed=run.seed,
        repeat=run.repeat if run.repeats > 1 else None, gateway=run.gateway.spelled() if run.gateway else None)
    return record.add(kind=KIND_VIRTUAL, phases=phases, **({"trace": run.trace} if run.trace else {}))


def system_row(run: SimRun, result: Replay) -> dict[str, Any]:
    """The summary's latency fields from the client log (the analysis's own functions: a ramp's
    sustained rate and an adaptive run's head to head too), and the system's: target cores used,
    downstream utilisation."""
    if result.served is None:
        return {}
    client = client_table(result).drop_columns(["request_id"]).to_pandas()  # its ids would be an object a request
    row = {**latency_percentiles(admitted_latency(client)), **result.served.measures()}
    if run.scenario.split("-", 1)[0] == ramp.RAMP_SCENARIO:
        row.update(ramp.measures(_info_of(run, result), client)[0])
    if result.limits:
        t = np.asarray(result.arrivals.t, dtype=np.float64)
        decisions = pd.DataFrame({"t": t, "adaptive_limit": np.asarray(result.limits, dtype=np.float64),
                                  "allowed": np.asarray(result.allowed, dtype=bool)})
        if result.limit_names is not None:
            decisions["limit_name"] = result.limit_names
        origin = min(float(t.min()), float(client["intended_t"].min())) if len(t) else 0.0
        row.update(adaptive.head_to_head_fields(_info_of(run, result), decisions, client, origin))
    return row


def _info_of(run: SimRun, result: Replay) -> RunInfo:
    """A virtual run's run.json as the analysis reads it: its record through the one reader."""
    return run_info_of(_run_record(run, result).to_json(), run.name)


SIMULATOR_FIGURES = ("wall_s", "evicted_keys", "target_cores", "downstream_utilisation")
"""The summary fields of a virtual run that its logs cannot give: run.json records them."""

SUMMARY_COLUMNS = ("t", "key", "cost", "allowed", "client_class", "client_id", "delay_s", "ideal_allowed")
"""What ``summarize`` reads of a decision log (the rest would cost a Python object a request)."""


def _summary_frame(table: pa.Table) -> pd.DataFrame:
    """The decision log's columns the summary reads, strings as categoricals (codes, not objects)."""
    return table.select([c for c in SUMMARY_COLUMNS if c in table.column_names]).to_pandas(strings_to_categorical=True)


def _read_summary_frame(path: Path) -> pd.DataFrame:
    """``_summary_frame`` of a decision log on disk, read column by column as the analysis does."""
    return _summary_frame(pq.read_table(path, columns=list(SUMMARY_COLUMNS), read_dictionary=["key", "client_class", "client_id"]))


def _write_parts(path: Path, parts: Iterable[pa.Table], schema: pa.Schema = DECISION_SCHEMA) -> None:
    """A log streamed into one Parquet file, a row group per part: one part in memory at a time."""
    with pq.ParquetWriter(path, schema) as writer:
        for part in parts:
            writer.write_table(part)


def _write_system(run_dir: Path, run: SimRun, result: Replay, figures: dict[str, Any]) -> None:
    """The rest of a virtual run's folder with the system model (its decision log is written
    first): the client log, the target's CPU samples and run.json, as a live run's, with the
    simulator's ``figures`` that no log holds (run.json ``simulator``: the analysis' row reads them there)."""
    if result.served is None:
        return
    atomic_write(run_dir / CLIENT_FILE, partial(_write_parts, parts=client_parts(result), schema=CLIENT_SCHEMA))
    write_text(run_dir / CPU_FILE, result.served.cpu().to_csv(index=False))
    _run_record(run, result).add(simulator=figures).write(run_dir / RUN_FILE)


def _open_folder(plan: SimPlan, out: Path) -> ResultsFolder:
    """``out``'s partial folder with campaign.yaml (every planned run named); a partial folder
    an earlier kill left there is refused, not mixed in."""
    folder = ResultsFolder(partial_path(out))
    if folder.root.exists():
        raise ScenarioError(f"--out {out}: an interrupted earlier campaign's {folder.root} is in the way "
                            f"(run_bench.py report {out} names what it holds; remove it to start anew)")
    config = dict(plan.config, machine=machine_facts(), created=utc_stamp())
    write_text(folder.root / CAMPAIGN_FILE, yaml.safe_dump(config, sort_keys=False))
    return folder


def execute(plan: SimPlan, out: Path | None, events: RunnerEvents[SimRun] | None = None) -> list[dict]:
    """Run every planned run; with ``out``, write the results folder as it goes, under its
    partial name (contract/folder.py), each run under its own, renamed when whole: a kill leaves
    ``.<out>.partial`` whose campaign.yaml names every planned run."""
    folder = _open_folder(plan, out) if out is not None else None
    rows: list[dict] = []
    ideals: dict[int, list[bool]] = {}  # open-loop arrivals do not depend on the algorithm
    for i, run in enumerate(plan.runs, 1):
        started = time.perf_counter()
        if events is not None:
            events.started(i, len(plan.runs), run)
        if not run.model.reactive and id(run.model) not in ideals:
            ideals[id(run.model)] = ideal_decisions(virtual_arrivals(run.model), run.policy)
        decider = run.decides_as or run.algorithm
        system = system_for(run.model, decider, plan.system, plan.downstream, run.seed)
        result, ideal = simulated(run.model, decider, run.policy, run.params, ideal=ideals.get(id(run.model)),
                                  system=system, gateway=run.gateway_store())
        row: dict[str, Any] = {
            "run": run.name,
            "scenario": run.scenario,
            "algorithm": run.algorithm,
            "system": run.system,
            "store": STORE,
            "limit": run.policy.limit,
            "window_s": run.policy.window_s,
            "burst": run.policy.effective_burst,
            "params": asdict(run.params),
            "gateway": run.identity()["gateway"],
        }
        if hasattr(run.model, "p"):
            row["scenario_params"] = asdict(run.model.p)
        parts = decision_parts(result, decider, ideal)
        if folder is None:
            frame = _summary_frame(pa.concat_tables(list(parts)))
        else:
            path = folder.partial_run_dir(run.name) / DECISIONS_FILE
            atomic_write(path, partial(_write_parts, parts=parts))
            frame = _read_summary_frame(path)
        policy = RunPolicy(run.policy.limit, run.policy.window_s, run.policy.effective_burst)
        row.update(summarize(frame, run.decides_as or run.algorithm, policy, asdict(run.params)))
        row["rejected_legit_rate"] = round(row["rejected_legit"] / row["legit_requests"], 6) if row["legit_requests"] else None
        del frame
        if result.arrivals.attempt is not None:
            row.update(retry_measures(attempt_log(result)))
        row.update(system_row(run, result))
        row["kind"] = KIND_VIRTUAL
        row["evicted_keys"] = result.evictions
        row["wall_s"] = round(time.perf_counter() - started, 3)
        if folder is not None:
            _write_system(folder.partial_run_dir(run.name), run, result, {k: row.get(k) for k in SIMULATOR_FIGURES})
            finish(folder.run_dir(run.name))
        rows.append(row)
        del result  # before the next run's replay: two at once would double the peak
        if events is not None:
            events.done(i, len(plan.runs), run, row)
    if out is not None and folder is not None:
        folder.write_summary(rows)
        finish(out)
    return rows
