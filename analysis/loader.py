"""Read a results folder by schema: which runs are whole, what each one was, and its logs.

Opening is cheap (file footers and headers only) so a folder of millions of rows lists fast; the
logs are read run by run, on demand, so each analysis worker holds one run in memory at a time. Anything that
makes a run unusable (missing or truncated Parquet, a run marked failed or interrupted, a wrong
column) leaves that run out with a reason; the others are analysed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import yaml

from contract import decision_file
from contract.errors import BadInput
from contract.folder import final_name, is_partial, partial_path
from contract.run_info import RunFileError, RunInfo, RunPolicy, read_run_json
from contract.schema import (
    CAMPAIGN_FILE,
    CLIENT_FILE,
    CLIENT_REQUIRED,
    CPU_COLUMNS,
    CPU_FILE,
    DECISIONS_FILE,
    ROLE_PLAN,
    RUN_ANALYSED,
    RUN_FILE,
    RUN_OK,
    RUNS_DIR,
    SYSTEM_SUITE,
    TWIN_FILE,
    parse_run_dir_name,
)

DECISION_REQUIRED = ("t", "key", "cost", "allowed", "client_class")
DECISION_OPTIONAL = ("delay_s", "ideal_allowed", "limit_name", "client_id", "decision_us", "adaptive_limit")
CATEGORICAL = ("key", "client_class", "limit_name", "client_id")
"""Low-cardinality strings read dictionary-encoded: ten million keys cost codes, not strings."""


class ResultsError(BadInput):
    """The folder is not a results folder at all."""


class RunDataError(ValueError):
    """One run's files cannot be used; the run is left out of the report."""


@dataclass
class Run:
    """One whole run: what it was (``info``) and where its logs are."""

    name: str
    path: Path
    info: RunInfo
    live: bool  # has a run.json (a campaign run), rather than a simulation run
    warnings: list[str] = field(default_factory=list)

    @property
    def has_client_log(self) -> bool:
        return (self.path / CLIENT_FILE).is_file()

    def decisions(self) -> pd.DataFrame:
        path = self.path / DECISIONS_FILE
        names = set(_guard(path, decision_file.read_schema).names)
        columns = [c for c in (*DECISION_REQUIRED, *DECISION_OPTIONAL) if c in names]
        dictionary = [c for c in CATEGORICAL if c in names]
        return _guard(path, lambda p: decision_file.read_table(p, columns=columns, read_dictionary=dictionary)).to_pandas()

    def twin(self) -> pd.DataFrame | None:
        """A peer run's virtual twin (TWIN_FILE), its decisions read as ``decisions`` reads the run's;
        None when the run has none (the suite's own runs, a url peer that claims nothing)."""
        path = self.path / TWIN_FILE
        if not path.is_file():
            return None
        names = set(_guard(path, pq.read_schema).names)
        return _read_parquet(path, [c for c in (*DECISION_REQUIRED, *DECISION_OPTIONAL, "algorithm") if c in names], [])

    def request_ids(self) -> pd.Series | None:
        """Each decision's request id, in the log's row order (None when the log has none)."""
        path = self.path / DECISIONS_FILE
        if "request_id" not in _guard(path, decision_file.read_schema).names:
            return None
        return _guard(path, lambda p: decision_file.read_table(p, columns=["request_id"])).to_pandas()["request_id"]

    def decision_columns(self, columns: Sequence[str]) -> pd.DataFrame:
        """These columns of the decision log, those it has, in its row order."""
        path = self.path / DECISIONS_FILE
        names = set(_guard(path, decision_file.read_schema).names)
        return _guard(path, lambda p: decision_file.read_table(p, columns=[c for c in columns if c in names])).to_pandas()

    def rejected_decisions(self) -> pd.DataFrame:
        """Rejected decisions with request id and Retry-After, for matching client retries."""
        table = _guard(self.path / DECISIONS_FILE, lambda p: decision_file.read_table(
            p, columns=["t", "request_id", "retry_after_s"], filters=[("allowed", "==", False)]))
        return table.to_pandas()

    def client(self, columns: Sequence[str] = CLIENT_REQUIRED) -> pd.DataFrame | None:
        """The plan's requests of the client log (the suite's own, warm-up and probe, left out);
        a column a log written before it existed lacks is left out too."""
        path = self.path / CLIENT_FILE
        if not path.is_file():
            return None
        names = set(_guard(path, pq.read_schema).names)
        wanted = [c for c in columns if c in names]
        if "role" not in names:
            return _read_parquet(path, wanted, [])
        table = _guard(path, lambda p: pq.read_table(p, columns=[*wanted, "role"]))
        plan = table.filter(pc.fill_null(pc.equal(table["role"], ROLE_PLAN), True))
        return plan.select(wanted).to_pandas()

    def client_has(self, column: str) -> bool:
        """Whether the client log has ``column`` (an optional one: older folders lack it)."""
        path = self.path / CLIENT_FILE
        return path.is_file() and column in _guard(path, pq.read_schema).names

    def cpu(self) -> pd.DataFrame | None:
        path = self.path / CPU_FILE
        if not path.is_file():
            return None
        try:
            df = pd.read_csv(path)
        except (OSError, ValueError) as exc:
            raise RunDataError(f"{path}: not readable CSV ({exc})") from None
        missing = [c for c in CPU_COLUMNS if c not in df.columns]
        if missing:
            raise RunDataError(f"{path}: missing column(s) {', '.join(missing)}; expected {', '.join(CPU_COLUMNS)}")
        return df


@dataclass
class LeftOut:
    name: str
    reason: str


@dataclass(frozen=True)
class Progress:
    """How far the campaign got: the runs campaign.yaml planned, those whose folders are whole,
    those a kill left half-written (``.<run>.partial``: never counted), and those never started."""

    planned: tuple[str, ...]
    finished: tuple[str, ...]
    incomplete: tuple[str, ...]
    missing: tuple[str, ...]
    interrupted: bool
    """The folder itself is still under its partial name: the campaign never completed."""

    def line(self) -> str | None:
        """One line for the report's warnings, None for a campaign that completed."""
        if not (self.interrupted or self.incomplete or self.missing):
            return None
        return (f"campaign interrupted: {len(self.planned) or '?'} runs planned, {len(self.finished)} finished, "
                f"{len(self.incomplete)} incomplete{_names(self.incomplete)} (not counted), "
                f"{len(self.missing)} missing{_names(self.missing)}")


def _names(names: tuple[str, ...], shown: int = 5) -> str:
    if not names:
        return ""
    more = f", and {len(names) - shown} more" if len(names) > shown else ""
    return f" ({', '.join(names[:shown])}{more})"


def progress_of(root: Path, campaign: dict[str, Any], finished: list[str], incomplete: list[str]) -> Progress:
    runs = campaign.get("runs")
    planned = tuple(runs) if isinstance(runs, dict) else tuple(str(r) for r in runs) if isinstance(runs, list) else ()
    done = set(finished) | set(incomplete)
    return Progress(planned, tuple(finished), tuple(incomplete), tuple(r for r in planned if r not in done),
                    is_partial(root))


@dataclass
class Results:
    root: Path
    campaign: dict[str, Any]
    runs: list[Run]
    left_out: list[LeftOut]
    progress: Progress | None = None


def _guard(path: Path, read: Any) -> pa.Table:
    try:
        return read(path)
    except FileNotFoundError:
        raise RunDataError(f"{path}: missing") from None
    except (OSError, pa.ArrowException) as exc:
        raise RunDataError(f"{path}: unreadable Parquet, truncated or corrupt ({exc})") from None


def _read_parquet(path: Path, columns: list[str], dictionary: list[str]) -> pd.DataFrame:
    return _guard(path, lambda p: pq.read_table(p, columns=columns, read_dictionary=dictionary)).to_pandas()


def _check_parquet(path: Path, required: tuple[str, ...], read_schema: Any = pq.read_schema) -> None:
    """Footer and columns only: a truncated file has no footer."""
    names = _guard(path, read_schema).names
    missing = [c for c in required if c not in names]
    if missing:
        raise RunDataError(f"{path}: missing column(s) {', '.join(missing)}")


def _campaign(root: Path) -> dict[str, Any]:
    path = root / CAMPAIGN_FILE
    if not path.is_file():
        return {}
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ResultsError(f"{path}: not readable YAML ({exc})") from None
    return raw if isinstance(raw, dict) else {}


def _sim_info(name: str, campaign: dict[str, Any]) -> RunInfo:
    """A simulation run: names from the folder, policy and parameters from campaign.yaml (its
    ``runs`` entry for the folder)."""
    parts = parse_run_dir_name(name)
    if parts is None:
        raise RunDataError(f"no {RUN_FILE} and the folder name is not <scenario>__<algorithm>__<store>")
    scenario, algorithm, store = parts
    runs = campaign.get("runs")  # a simulation's: per run folder; a live campaign's: the list of its runs
    run = runs.get(name) if isinstance(runs, dict) else None
    if not isinstance(run, dict):  # written before campaign.yaml named each run
        run = {"policy": campaign.get("policy"), "params": (campaign.get("params") or {}).get(algorithm),
               "scenario_params": (campaign.get("scenario_params") or {}).get(scenario)}
    if not run.get("policy"):
        raise RunDataError(f"no {RUN_FILE} and no policy in {CAMPAIGN_FILE}")
    try:
        policy = RunPolicy.from_dict(run["policy"], CAMPAIGN_FILE)
    except RunFileError as exc:
        raise RunDataError(str(exc)) from None
    seed, repeat = run.get("seed"), run.get("repeat")
    return RunInfo(
        status=RUN_OK, scenario=scenario, algorithm=algorithm, store=store, policy=policy,
        params=dict(run.get("params") or {}), scenario_params=dict(run.get("scenario_params") or {}),
        system=str(run.get("system") or SYSTEM_SUITE), seed=seed if isinstance(seed, int) else None,
        repeat=repeat if isinstance(repeat, int) else None, trace=str(run["trace"]) if run.get("trace") else None,
    )


def _open_run(path: Path, campaign: dict[str, Any]) -> Run:
    live = (path / RUN_FILE).is_file()
    if not live and isinstance(campaign.get("runs"), list):  # a live campaign's run: its record is run.json
        raise RunDataError(f"run interrupted: no {RUN_FILE} (stopped before it was recorded)")
    try:
        info = read_run_json(path / RUN_FILE) if live else _sim_info(path.name, campaign)
    except RunFileError as exc:
        raise RunDataError(str(exc)) from None
    if info.status not in RUN_ANALYSED:  # a degraded run has its data: analysed, and named degraded
        why = f": {info.error.strip().splitlines()[-1]}" if info.error and info.error.strip() else ""
        raise RunDataError(f"run marked {info.status}{why}")
    decisions = path / DECISIONS_FILE
    _check_parquet(decisions, DECISION_REQUIRED, decision_file.read_schema)
    run = Run(path.name, path, info, live)
    if not decisions.is_file():
        run.warnings.append(f"{run.name}: its target was killed: the decisions are the parts it had flushed")
    if (path / CLIENT_FILE).is_file():
        _check_parquet(path / CLIENT_FILE, CLIENT_REQUIRED)
    elif live:
        run.warnings.append(f"{run.name}: no {CLIENT_FILE}: latency, goodput and header truthfulness are n/a")
    run.warnings += _response_findings(run.name, info.response)
    return run


def _response_findings(name: str, response: dict[str, Any] | None) -> list[str]:
    """What a peer did not tell the client it refused, and the lines of its config that fix it."""
    if not response:
        return []
    if response.get("error"):
        return [f"{name}: {response['error']}"]
    findings = response.get("findings") or []
    if not findings:
        return []
    fix = " ".join(str(response.get("fix") or "").split())
    return [f"{name}: what it tells refused clients: {'; '.join(findings)}" + (f"; the config that fixes it: {fix}" if fix else "")]


def load_results(root: Path) -> Results:
    """Open a results folder; raises ResultsError when ``root`` is not one."""
    root = Path(root)
    if not root.is_dir() and partial_path(root).is_dir():  # the campaign was killed: its folder kept its partial name
        root = partial_path(root)
    runs_dir = root / RUNS_DIR
    if not root.is_dir():
        raise ResultsError(f"{root}: no such folder")
    if not runs_dir.is_dir():
        raise ResultsError(f"{root} is not a results folder: it has no {RUNS_DIR}/ "
                           f"(expected {RUNS_DIR}/<scenario>__<algorithm>__<store>/{DECISIONS_FILE})")
    folders = sorted(p for p in runs_dir.iterdir() if p.is_dir())
    paths = [p for p in folders if not is_partial(p)]
    incomplete = [final_name(p) for p in folders if is_partial(p)]
    campaign = _campaign(root)
    progress = progress_of(root, campaign, [p.name for p in paths], incomplete)
    if not paths:
        raise ResultsError(f"{root} has no runs: {RUNS_DIR}/ holds no whole run"
                           + (f"; {progress.line()}" if progress.line() else " (a campaign interrupted before its first run?)"))
    runs, left_out = [], []
    for path in paths:
        try:
            runs.append(_open_run(path, campaign))
        except RunDataError as exc:
            left_out.append(LeftOut(path.name, str(exc)))
    return Results(root, campaign, runs, left_out, progress)
