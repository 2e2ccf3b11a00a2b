"""One pass over one run's logs: its summary row and the small series the charts draw.

Runs are analysed in worker processes, one run per worker at a time, and only the small results
come back, so a folder of ten million rows needs the memory of its largest runs, not of all.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor, as_completed
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from contract.run_info import degraded_line
from contract.schema import (
    ALGORITHM_NAMES,
    CLIENT_REQUIRED,
    DECIDED_BY_MODEL,
    DECISIONS_FILE,
    REPEAT_MARK,
    RUN_DEGRADED,
    split_repeat,
)

from . import adaptive, latency, metrics, promises, ramp, retries
from . import client as client_metrics
from .cpu import EMPTY_MARGINAL, cpu_ms_per_1k, generator_bound, marginal_cpu
from .ideal import ideal_sliding_log
from .keys import per_key
from .loader import LeftOut, Results, Run, RunDataError
from .pool import worker_pool
from .theory import bounds_concurrency

ENVELOPE_POINTS = 16
BOUNDARY_SCENARIO = "boundary_burst"
LATENCY_SCENARIO = "unhealthy_downstream"
RETRY_STORM_PREFIX = "retry_storm"
BOUNDARY_SPAN_S = 1.0
BOUNDARY_BIN_S = 0.1
CALLS_BIN_S = 0.1  # a storm lasts seconds: the herd and its spread show at 100 ms
CLIENT_MEASURES = ("intended_t", "sent_t", "done_t", "status", "attempt")
KEY_ROWS = 10_000
"""A trace run's keys kept for keys.csv and the report, the most refused first."""


@dataclass
class RunAnalysis:
    run: Run
    row: dict[str, Any]
    envelope: pd.DataFrame
    origin: float  # the run's first time on its own clock: charts draw time from here
    boundary: pd.DataFrame | None = None  # offset_s from the window boundary, admitted per bin
    latency_series: pd.DataFrame | None = None
    latency_bin_s: float | None = None  # width of the latency_series bins
    latency_cdf: tuple[np.ndarray, np.ndarray] | None = None
    calls: pd.DataFrame | None = None  # t, calls per second (retry storms)
    ramp: pd.DataFrame | None = None  # a ramp run's bins by offered rate (analysis.ramp.bins)
    limit: pd.DataFrame | None = None  # an adaptive run's limit over time (analysis.adaptive.limit_over_time)
    keys: pd.DataFrame | None = None  # a trace run's keys, the most refused first (analysis.keys.per_key)
    twin: dict[str, Any] | None = None  # a peer run's virtual twin's row (_twin_row), shown after its own

    @property
    def degraded(self) -> tuple[float, float] | None:
        phase = self.run.info.degraded
        return None if phase is None else (phase.start_t - self.origin, phase.end_t - self.origin)


@dataclass
class FolderAnalysis:
    results: Results
    runs: list[RunAnalysis]
    left_out: list[LeftOut]
    warnings: list[str] = field(default_factory=list)

    @property
    def rows(self) -> list[dict[str, Any]]:
        """Every run's row, a peer run's twin right after it."""
        return [r for a in self.runs for r in (a.row, a.twin) if r is not None]


def _base_row(run: Run) -> dict[str, Any]:
    i = run.info
    return {"scenario": i.scenario, "algorithm": i.algorithm, "system": i.system, "store": i.store,
            "decided_from": i.decided_from, "decision_uncertainty_ms": i.decision_uncertainty_ms, "limit": i.policy.limit,
            "window_s": i.policy.window_s, "burst": i.policy.burst, "params": i.params,
            "scenario_params": i.scenario_params, "run": run.name, "twin_of": None,
            "repeat": i.repeat if i.repeat is not None else split_repeat(run.name)[1], "seed": i.seed, "trace": i.trace,
            "kind": i.kind if run.live else "simulated", "processes": i.processes, "limiters": i.limiters,
            "gateway": i.gateway, "status": i.status,
            "degraded_share": i.fallback["share"] if i.fallback else None,
            "degraded_span_s": round(i.fallback["end_t"] - i.fallback["start_t"], 3) if i.fallback else None}


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 6) if whole else None


def _decision_row(df: pd.DataFrame, run: Run, envelope: pd.DataFrame, kept: np.ndarray | None = None) -> dict[str, Any]:
    p = run.info.policy
    row: dict[str, Any] = dict(metrics.class_split(df))
    row["rejected_rate"] = _rate(row["rejected"], row["requests"])
    row["rejected_legit_rate"] = _rate(row["rejected_legit"], row["legit_requests"])
    row["rejected_abusive_rate"] = _rate(row["rejected_abusive"], row["abusive_requests"])
    row["rejected_by_limit"] = metrics.rejections_by_limit(df)
    if bounds_concurrency(run.info.algorithm):  # one global key: measured in flight, never per key
        row.update(metrics.basis(df, run.info.algorithm, p, run.info.params, _done_times(run, df, kept)))
    else:
        at_window = envelope.loc[envelope["interval_s"] == p.window_s, "max_admitted_cost"]  # envelope_lengths keeps W
        row.update(metrics.NO_IN_FLIGHT, over_admission=round(float(at_window.iloc[0]) / p.limit, 6))
    if "ideal_allowed" not in df.columns or df["ideal_allowed"].isna().any():
        df["ideal_allowed"] = ideal_sliding_log(df["t"].to_numpy(dtype=np.float64), df["key"],
                                                df["cost"].to_numpy(dtype=np.float64), p.limit, p.window_s)
    row.update(metrics.accuracy(df))
    row["legit_fairness_jain"] = metrics.legit_fairness(df)
    us = df["decision_us"].to_numpy() if "decision_us" in df.columns else np.empty(0)
    row["decision_us_p50"] = latency.nearest_rank(us, 50.0)
    row["decision_us_p99"] = latency.nearest_rank(us, 99.0)
    return row


TWIN_SYSTEM = "twin"
TWIN_MARK = "~twin"
TWIN_KEPT = ("scenario", "limit", "window_s", "burst", "params", "scenario_params", "seed", "repeat", "trace")
"""What a twin row says as its live row does: the same traffic, under the same policy."""


def _twin_row(run: Run, row: dict[str, Any]) -> dict[str, Any] | None:
    """A peer's virtual twin as a row beside the live one: the same scenario through the suite's
    model of that peer (a url peer's: the algorithm it claims) in virtual time, judged at the run's
    policy as the live row is. Only what decisions give (no client log, no CPU); ``twin_of`` names
    the live run, ``system`` is ``twin``, ``algorithm`` says whose twin and which model; its store
    is the live row's, so every table keeps it beside that row."""
    df = run.twin()
    if df is None or df.empty:
        return None
    p = run.info.policy
    envelope = metrics.admitted_envelope(df, metrics.envelope_lengths(p.window_s, ENVELOPE_POINTS))
    base, repeat = split_repeat(run.name)
    twin: dict[str, Any] = dict.fromkeys(row)
    twin.update({k: row[k] for k in TWIN_KEPT})
    twin.update(algorithm=f"{row['algorithm']} twin: {df['algorithm'].iloc[0]}", system=TWIN_SYSTEM, store=row["store"],
                kind=TWIN_SYSTEM, decided_from=DECIDED_BY_MODEL, twin_of=run.name,
                run=f"{base}{TWIN_MARK}" + ("" if repeat is None else f"{REPEAT_MARK}{repeat}"))
    twin.update(_decision_row(df, run, envelope))
    return twin


def _done_times(run: Run, df: pd.DataFrame, kept: np.ndarray | None = None) -> np.ndarray | None:
    """Each decision's completion on the client's clock (its request's first answer at or after
    it; NaN where the client log has none), or None without a client log (live or virtual alike).
    ``kept``: the log's rows ``df`` holds (``adaptive.one_row_per_request``), None for all."""
    if not run.has_client_log:
        return None
    ids, client = run.request_ids(), run.client(("request_id", "done_t"))
    if ids is not None and kept is not None:
        ids = ids.iloc[kept].reset_index(drop=True)
    if ids is None or client is None or client.empty or len(ids) != len(df):
        return None
    asked = pd.DataFrame({"t": df["t"].to_numpy(dtype=np.float64), "request_id": ids.astype(str).to_numpy(),
                          "i": np.arange(len(df))}).sort_values("t", kind="stable")
    done = client.dropna(subset=["done_t"]).assign(request_id=lambda c: c["request_id"].astype(str))
    done = done.rename(columns={"done_t": "t"}).assign(done_t=lambda c: c["t"]).sort_values("t", kind="stable")
    matched = pd.merge_asof(asked, done, on="t", by="request_id", direction="forward")
    out = np.full(len(df), np.nan)
    out[matched["i"].to_numpy()] = matched["done_t"].to_numpy(dtype=np.float64)
    return out


def _boundary(df: pd.DataFrame, window_s: float) -> pd.DataFrame | None:
    """Admitted requests per 100 ms within a second of the window boundary the burst hit hardest."""
    t = df["t"].to_numpy(dtype=np.float64)
    span, width = min(BOUNDARY_SPAN_S, window_s / 2), min(BOUNDARY_BIN_S, window_s / 10)
    edges = np.round(t / window_s) * window_s
    near = np.abs(t - edges) < span
    if not near.any():
        return None
    values, counts = np.unique(edges[near], return_counts=True)
    edge = values[np.argmax(counts)]
    offsets = t[df["allowed"].to_numpy(dtype=bool)] - edge
    bins = np.arange(-span, span + width / 2, width)
    admitted, _ = np.histogram(offsets, bins=bins)
    return pd.DataFrame({"offset_s": bins[:-1], "admitted": admitted})


def _per_second(t: np.ndarray, origin: float) -> pd.DataFrame:
    bins = np.floor((t - origin) / CALLS_BIN_S).astype(np.int64)
    counts = np.bincount(bins - bins.min()) if len(bins) else np.empty(0, dtype=np.int64)
    start = bins.min() if len(bins) else 0
    return pd.DataFrame({"t": (np.arange(len(counts)) + start) * CALLS_BIN_S, "calls_per_s": counts / CALLS_BIN_S})


def _client_part(a: RunAnalysis, client: pd.DataFrame) -> None:
    run, row = a.run, a.row
    lat = latency.admitted_latency(client)
    row.update(latency.latency_percentiles(lat))
    row["goodput_rps"] = client_metrics.goodput(client)
    degraded = run.info.degraded
    a.latency_bin_s = latency.time_bin(float(lat["t"].max()) - a.origin if len(lat) else 0.0,
                                       None if degraded is None else degraded.end_t - degraded.start_t)
    a.latency_series = latency.over_time(lat, a.origin, a.latency_bin_s, None if degraded is None else degraded.start_t)
    a.latency_cdf = latency.cdf(lat["intended"].to_numpy()) if len(lat) else None
    row["time_to_recover_s"] = (None if degraded is None else
                                latency.time_to_recover(a.latency_series, degraded, a.origin, a.latency_bin_s))
    if (client["attempt"].to_numpy() > 1).any():
        # with request ids (strings) and what each answer said: read only when there are retries to match
        attempts = run.client((*CLIENT_REQUIRED, promises.LIMIT_FIELDS))
        share, count = client_metrics.header_truthfulness(attempts, run.rejected_decisions())
        row.update(retries.retry_measures(attempts))
    else:
        share, count = None, 0  # the retry measures stay as EMPTY_CLIENT set them
    row["header_truthfulness"], row["retries_at_retry_after"] = share, count


EMPTY_CLIENT = {**{f"latency_{p}_{b}_ms": None for b in latency.BASES for p in latency.PERCENTILES},
                "goodput_rps": None, "time_to_recover_s": None, "header_truthfulness": None, "retries_at_retry_after": None,
                **retries.EMPTY}
EMPTY_CPU = {"cpu_target_ms_per_1k": None, "cpu_generator_ms_per_1k": None, "generator_bound": None, **EMPTY_MARGINAL}


def analyze_run(run: Run) -> RunAnalysis:
    df, kept = adaptive.one_row_per_request(run.decisions())
    client = run.client(CLIENT_MEASURES)
    cpu = run.cpu()
    t = df["t"].to_numpy(dtype=np.float64)
    origin = float(t.min()) if len(t) else 0.0
    if client is not None and len(client):
        origin = min(origin, float(client["intended_t"].min()))
    p = run.info.policy
    envelope = metrics.admitted_envelope(df, metrics.envelope_lengths(p.window_s, ENVELOPE_POINTS))
    row = _base_row(run)
    row.update(_decision_row(df, run, envelope, kept))
    a = RunAnalysis(run, row, envelope, origin)
    row.update(EMPTY_CLIENT)
    row.update(ramp.EMPTY)
    row.update(promises.EMPTY)
    if client is not None:
        _client_part(a, client)
        row.update(_promises(run))
        if run.info.scenario.split("-", 1)[0] == ramp.RAMP_SCENARIO:
            fields, a.ramp = ramp.measures(run.info, client)
            row.update(fields)
    row.update(EMPTY_CPU)
    if cpu is not None:
        row.update(cpu_ms_per_1k(cpu, len(client) if client is not None else len(df)))
        row.update(marginal_cpu(cpu, t))
        row["generator_bound"] = generator_bound(cpu)
    if run.info.generator_bound is not None:  # the runner's verdict: the same rule, with its late sends
        row["generator_bound"] = bool(run.info.generator_bound)
    if "adaptive_limit" in df.columns and df["adaptive_limit"].notna().any():
        _adaptive_part(a, df, client)
    if run.info.trace is not None:  # your own traffic: who got the 429s
        a.keys = per_key(df, p.window_s).head(KEY_ROWS)
    if run.info.scenario == BOUNDARY_SCENARIO:
        a.boundary = _boundary(df, p.window_s)
    if run.info.scenario.startswith(RETRY_STORM_PREFIX):
        sent = client["sent_t"].to_numpy(dtype=np.float64) if client is not None else t
        a.calls = _per_second(sent[np.isfinite(sent)], origin)
    row.update(run.info.simulator)  # a virtual run's figures no log holds, as its run.json recorded them
    a.twin = _twin_row(run, row)
    return a


def _promises(run: Run) -> dict[str, Any]:
    """Whether the limit fields the client was sent told the truth (analysis.promises), per the
    decision log's keys; null without the client log's limit fields (older folders, virtual runs)."""
    if not run.client_has(promises.LIMIT_FIELDS):
        return dict(promises.EMPTY)
    return promises.run_measures(run.client(promises.COLUMNS), run.decision_columns(promises.DECISION_COLUMNS))


def _adaptive_part(a: RunAnalysis, df: pd.DataFrame, client: pd.DataFrame | None) -> None:
    """The head-to-head fields and limit series of a run whose limiter logs its limit."""
    info = a.run.info
    a.row.update(adaptive.head_to_head_fields(info, df, client, a.origin))
    a.limit = adaptive.limit_over_time(df["t"].to_numpy(dtype=np.float64),
                                       df["adaptive_limit"].to_numpy(dtype=np.float64), a.origin)


READ_ERRORS = (RunDataError, OSError, pa.ArrowException)


def _analyze_or_leave_out(run: Run) -> RunAnalysis | LeftOut:
    """One run in a worker: a run whose logs fail while being read comes back as left out."""
    try:
        return analyze_run(run)
    except READ_ERRORS as exc:
        return LeftOut(run.name, f"{type(exc).__name__}: {exc}")


def _size(run: Run) -> int:
    return (run.path / DECISIONS_FILE).stat().st_size if (run.path / DECISIONS_FILE).is_file() else 0


def analyze(results: Results, on_run: Callable[[int, int, str], None] | None = None,
            pool: Executor | None = None) -> FolderAnalysis:
    """Analyse every whole run in ``pool`` (default: a new worker_pool), largest first so that
    the workers finish together; ``on_run(i, n, name)`` as each run is done. A run whose logs fail
    while being read is left out, named."""
    if pool is None:
        with worker_pool() as own:
            return analyze(results, on_run, own)
    futures = {pool.submit(_analyze_or_leave_out, run): run for run in sorted(results.runs, key=_size, reverse=True)}
    for i, future in enumerate(as_completed(futures), 1):
        if on_run is not None:
            on_run(i, len(futures), futures[future].name)
    done = {futures[f].name: f.result() for f in futures}
    out = FolderAnalysis(results, [], list(results.left_out))
    for run in results.runs:
        result = done[run.name]
        if isinstance(result, LeftOut):
            out.left_out.append(result)
            continue
        out.runs.append(result)
        out.warnings.extend(run.warnings)
        if run.info.fallback:
            out.warnings.append(f"{run.name}: {degraded_line(run.info.store, run.info.fallback)}")
        if run.info.status == RUN_DEGRADED:
            out.warnings.append(f"{run.name}: run degraded: {'; '.join(run.info.degraded_reasons)}")
        if result.row["generator_bound"]:
            out.warnings.append(f"{run.name}: generator-bound: the load generator, not the target, was the bottleneck")
    rank = {name: i for i, name in enumerate(ALGORITHM_NAMES)}
    out.runs.sort(key=lambda a: (a.row["scenario"], rank.get(a.row["algorithm"], len(rank)), a.row["algorithm"], a.row["store"]))
    return out
