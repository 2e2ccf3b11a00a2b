"""`validate --live`: replay the policy's traffic over HTTP with the campaign runner (LiveRunner:
real target, Locust, CPU sampling) and measure each run with the analysis code.

The results folder is a temp dir unless ``--out`` keeps it (then the report is built there too).
SIGINT/SIGTERM raise ``Interrupted`` inside the runner, which stops its children; the temp dir
goes with the ``with`` block.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from analysis.analyze import analyze
from analysis.latency import admitted_latency, nearest_rank
from analysis.loader import load_results
from analysis.report import build_report
from contract.atomic import write_text
from contract.folder import utc_stamp
from contract.machine import machine_facts
from contract.schema import CAMPAIGN_FILE, CLIENT_FILE, DECISIONS_FILE, LEGIT, ROLE_PLAN, RUN_DEGRADED, RUN_OK, STATUS_TOO_MANY
from harness.campaign.policy_file import PolicyFile
from harness.events import RunnerEvents
from harness.live.plan import LiveRun
from harness.live.runner import LiveRunner
from harness.live.supervise import signals_interrupt
from targets.redact import redacted

from .probes import Probe, ProbePlan, plan_live

Say = Callable[[str], None]


@dataclass
class ProbeResult:
    probe: Probe
    info: dict[str, Any]
    """The run's run.json."""
    values: dict[str, float | None] = field(default_factory=dict)
    """Live metric name -> measured value (harness.campaign.thresholds.LIVE_METRICS)."""
    facts: dict[str, Any] = field(default_factory=dict)
    """Counts the messages quote."""

    @property
    def error(self) -> str | None:
        if self.info.get("status") == RUN_OK:
            return None
        if self.info.get("status") == RUN_DEGRADED:  # its figures are not the policy's: no probe passes on them
            return f"degraded: {'; '.join(self.info.get('degraded_reasons') or ())}"
        lines = str(self.info.get("error") or self.info.get("status") or "no result").strip().splitlines()
        return lines[0] if len(lines) == 1 else f"{lines[0]} ... {lines[-1]}"


@dataclass(frozen=True)
class LiveOutcome:
    plan: ProbePlan
    results: list[ProbeResult]
    folder: Path | None
    """Kept results folder (``--out``), else None."""


@contextmanager
def _folder(out: Path | None, name: str) -> Iterator[Path]:
    if out is not None:
        yield out
        return
    with tempfile.TemporaryDirectory(prefix="validate-live-") as tmp:
        yield Path(tmp) / name


def run_live(policy: PolicyFile, out: Path | None, say: Say, events: RunnerEvents[LiveRun] | None = None) -> LiveOutcome:
    """Every live run of the policy, measured; raises harness.live.supervise.Interrupted on SIGINT/SIGTERM.
    ``say`` prints what each run is; ``events`` hears each run start and end and the target's counters
    (the command line's one line per run and status line)."""
    plan = plan_live(policy)
    if plan.campaign is None:
        return LiveOutcome(plan, [], None)
    with _folder(out, policy.name) as root:
        root.mkdir(parents=True, exist_ok=True)
        config = {"validate": policy.model_dump(mode="json"), **plan.campaign.model_dump(mode="json"),
                  "machine": machine_facts(), "created": utc_stamp()}
        write_text(root / CAMPAIGN_FILE, yaml.safe_dump(redacted(config), sort_keys=False))
        infos = _execute(plan, root, say, events or RunnerEvents())
        say("live: analysing" + (" and writing the report" if out is not None else ""))
        rows = {r["run"]: r for r in (build_report(root) if out is not None else analyze(load_results(root))).rows}
        results = [_measure(root, probe, info, rows.get(probe.run.name)) for probe, info in zip(plan.probes, infos)]
    return LiveOutcome(plan, results, out)


def _execute(plan: ProbePlan, root: Path, say: Say, events: RunnerEvents[LiveRun]) -> list[dict[str, Any]]:
    assert plan.campaign is not None
    runner = LiveRunner(plan.campaign, root, workers=1, events=events)
    infos = []
    say(f"live: {plan.setup}")
    try:
        with signals_interrupt():
            for i, probe in enumerate(plan.probes, 1):
                say(f"live {i}/{len(plan.probes)} {probe.summary}")
                events.started(i, len(plan.probes), probe.run)
                info = runner.execute(probe.run)
                events.done(i, len(plan.probes), probe.run, info)
                infos.append(info)
    finally:
        runner.close()  # our own redis-server, if a run started one
    return infos


def _measure(root: Path, probe: Probe, info: dict[str, Any], row: dict[str, Any] | None) -> ProbeResult:
    result = ProbeResult(probe, info)
    if result.error is not None or row is None:
        if result.error is None:
            result.info = {**info, "status": "left out", "error": "the analysis left the run out (see the report)"}
        return result
    result.facts["generator_bound"] = bool(row.get("generator_bound"))
    if probe.kind == "burst":
        result.values["live_over_admission"] = row["over_admission"]
        return result
    run_dir = root / "runs" / probe.run.name
    decisions = pd.read_parquet(run_dir / DECISIONS_FILE, columns=["request_id", "client_class", "allowed",
                                                                   "limit_name"])
    client = pd.read_parquet(run_dir / CLIENT_FILE, filters=[("role", "==", ROLE_PLAN)])  # not the warm-up
    legit_ids = decisions.loc[decisions["client_class"] == LEGIT, "request_id"].unique()
    legit = client[client["request_id"].isin(legit_ids) & (client["status"] != 0)]
    rejected = int((legit["status"] == STATUS_TOO_MANY).sum())
    by_limit = decisions[(decisions["client_class"] == LEGIT) & ~decisions["allowed"]]["limit_name"].value_counts()
    result.facts.update(legit=len(legit), rejected=rejected, rejected_by=by_limit.to_dict(), requests=len(client))
    rate = rejected / len(legit) if len(legit) else None
    if probe.kind == "nat":
        result.values["live_nat_legit_rejection_rate"] = rate
        return result
    latency = admitted_latency(legit)
    result.facts["admitted"] = len(latency)
    result.values.update(live_legit_rejection_rate=rate, live_p99_ms=nearest_rank(latency["intended"].to_numpy(), 99),
                         live_cpu_ms_per_1k=row.get("cpu_target_ms_per_1k"))
    return result
