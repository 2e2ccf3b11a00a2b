"""run.json: what a run was (scenario, algorithm, store, policy, phases) and how it ended, live or
virtual (``kind``).

One record, one writer, one reader: the live runner and the simulator (``harness/sim/runner.py``,
``kind: virtual``) both build a ``RunRecord`` and write it with ``write_run_json``; the analysis
reads it with ``read_run_json`` (``run_info_of`` for a record not yet written). Schema constants
in ``schema.py``, documented in docs/analysis.md.
"""

from __future__ import annotations

import json
import math
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any

from .atomic import write_text
from .errors import BadInput
from .schema import DECIDED_BY_TARGET, DEGRADED_PHASE, RUN_REQUIRED, RUN_SCHEMA_VERSION, RUN_STATUSES, SYSTEM_SUITE


class RunFileError(BadInput):
    """A run.json that cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class RunPolicy:
    limit: float
    window_s: float
    burst: float  # effective: the limit when the policy gives none

    @classmethod
    def from_dict(cls, raw: Any, where: str) -> RunPolicy:
        if not isinstance(raw, dict):
            raise RunFileError(f"{where}: policy must be an object with limit, window_s, burst")
        values = {}
        for name in ("limit", "window_s"):
            value = raw.get(name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
                raise RunFileError(f"{where}: policy.{name} must be a positive number, got {value!r}")
            values[name] = float(value)
        burst = raw.get("burst")
        if burst is not None and (not isinstance(burst, int | float) or burst <= 0):
            raise RunFileError(f"{where}: policy.burst must be a positive number or null, got {burst!r}")
        return cls(values["limit"], values["window_s"], float(burst) if burst is not None else values["limit"])


@dataclass(frozen=True)
class Phase:
    name: str
    start_t: float
    end_t: float


@dataclass(frozen=True)
class RunInfo:
    status: str
    scenario: str
    algorithm: str
    store: str
    policy: RunPolicy
    params: dict[str, Any] = field(default_factory=dict)
    scenario_params: dict[str, Any] = field(default_factory=dict)
    phases: tuple[Phase, ...] = ()
    generator_bound: bool | None = None
    error: str | None = None
    system: str = SYSTEM_SUITE
    """Who limited: ``suite``, or a peer target's name (``nginx``)."""
    decided_from: str = DECIDED_BY_TARGET
    """``target`` (the limiter's own records) or ``client`` (inferred from the client log: a url peer)."""
    decision_uncertainty_ms: float | None = None
    """Client-side decisions: the P99 round trip (``round_trip_ms.p99``), the uncertainty of each decision's time."""
    response: dict[str, Any] | None = None
    """A peer's refusal as a client read it: ``findings`` (what it does not tell) and ``fix``
    (the config lines that do), harness/live/peers/response.py."""
    processes: int = 1
    """Server processes per target node."""
    limiters: str = "shared"
    """``per-process`` when each of a node's processes kept its own counts (memory store,
    Redis local mode): the node could admit up to processes x L."""
    fallback: dict[str, Any] | None = None
    """run.json's ``degraded``: some decisions came from a fallback, not the store (``share``,
    ``sources``, ``start_t``, ``end_t``); None when the store made every decision."""
    degraded_reasons: tuple[str, ...] = ()
    """Why a ``degraded`` run is so (run.json ``degraded_reasons``)."""

    kind: str = "live"
    """``live``, or ``virtual`` (contract.schema.KIND_VIRTUAL): a simulated run with the system model."""
    seed: int | None = None
    """The seed its traffic was built from (a repeat's: the campaign's seed + k - 1); None in
    folders written before run.json recorded it."""
    repeat: int | None = None
    """k of a repeated run (``repeats`` >= 2), None for a run made once; from run.json, else the folder name."""
    trace: str | None = None
    """The trace file the run replayed (``simulate --trace``), else None."""
    gateway: dict[str, float] | None = None
    """The token bucket in front of the limiter (``{rate, burst}``), else None."""
    simulator: dict[str, Any] = field(default_factory=dict)
    """A virtual run's figures no log holds (``wall_s``, ``evicted_keys``, ``target_cores``,
    ``downstream_utilisation``): recorded with the run, so the summary row never borrows another's."""

    @property
    def degraded(self) -> Phase | None:
        return next((p for p in self.phases if p.name == DEGRADED_PHASE), None)


@dataclass
class RunRecord:
    """run.json of a live run as the runner builds it, field by field in the order it is written.

    The first fields are known when the run is planned and always written; every other field is
    written once a step of the run has given it (``add``), even as null: a run that failed early
    says only what it got to. ``to_json`` is the file's content (``write_run_json`` adds the schema)."""

    status: str
    scenario: str
    algorithm: str
    store: str
    system: str
    policy: dict[str, float | None]
    """``{"limit", "window_s", "burst"}``, ``burst`` null for the default."""
    params: dict[str, Any]
    scenario_params: dict[str, Any]
    workers: int
    """Locust workers that sent the plan (0: a virtual run, whose model sends)."""
    processes: int
    limiters: str
    seed: int
    """The seed the run's traffic and replay are built from: the campaign's, plus the repeat's offset."""
    repeat: int | None
    """k of ``repeats`` (null for a run made once): the analysis groups repeats by it."""
    gateway: dict[str, float] | None
    """The token bucket in front of the limiter (``{rate, burst}``), null without one."""
    kind: str | None = None
    """``virtual`` for a simulated run (contract.schema.KIND_VIRTUAL); not written for a live one."""
    trace: str | None = None
    """The trace file a virtual run replayed (``simulate --trace``)."""
    server: str | None = None
    """The suite target's server, ``tuned`` or ``stock`` (uvicorn's own); absent for a peer's run."""
    peer_config: dict[str, Any] | None = None
    """A peer running the user's own config file (a campaign's ``{name, config}``): the file, the
    product, and the limit of it (name, line, limit, window_s, burst) the run is judged by."""
    cpus: dict[str, Any] | str | None = None
    """``scale.pin``: the cores of the targets and of the generator, or why they were not pinned."""
    redis_restarted: str | None = None
    """The runner's own redis-server had died since the previous run: restarted before this one (why)."""
    started_again: str | None = None
    """The side under test was ready only after the plan's first send (a busy machine): the run was
    started again, from an empty folder, with a lead that covers its start-up (why)."""
    start_at: float | None = None
    planned_requests: int | None = None
    end_at: float | None = None
    phases: list[dict[str, Any]] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)
    routing: str | None = None
    joins_s: list[float] = field(default_factory=list)
    response: dict[str, Any] | None = None
    """A peer's refusal as a client read it (harness/live/peers/response.py)."""
    remote_workers: list[dict[str, Any]] = field(default_factory=list)
    clock_unbounded: list[int] = field(default_factory=list)
    sent: int | None = None
    """The plan's requests sent (its follow-ups included; the suite's own are ``own_requests``)."""
    planned_sent: int | None = None
    """How many of the planned requests were sent (each counted once): ``planned_requests``, or the
    run failed (harness/live/logs.py: ``plan_not_kept``)."""
    sent_twice: int | None = None
    """Requests sent again under the same id and attempt (a share replayed twice): 0, or the run failed."""
    client_addresses: int | None = None
    """How many source addresses the plan's clients sent from (scenarios/addresses.py)."""
    own_requests: dict[str, int] | None = None
    """The suite's own requests to the side, by role (``warm-up``, ``probe``): in the client log,
    from addresses and keys of their own."""
    unanswered: int | None = None
    late_groups: int | None = None
    late_share: float | None = None
    send_lag_ms: dict[str, float | None] | None = None
    burst_groups: int | None = None
    burst_size: int | None = None
    burst_spread_ms: dict[str, float] | None = None
    burst_decision_spread_ms: dict[str, float] | None = None
    decided_from: str | None = None
    round_trip_ms: dict[str, float | None] | None = None
    keyed_by: str | None = None
    """A url peer's declared key (``ip``, ``header:NAME``; null: undeclared, keyed as the suite's
    targets key): the key its client-side decisions, and so every metric of the run, are per."""
    degraded: dict[str, Any] | None = None
    """How the store degraded during the run (harness/live/measures.py: ``store_degradation``)."""
    failed_requests: dict[str, Any] | None = None
    """Plan requests the suite's target left unanswered or answered neither 2xx nor 429, outside
    the run's phases (harness/live/measures.py: ``failed_requests``)."""
    degraded_reasons: list[str] | None = None
    """Why the run is ``degraded``, each with its share (empty: it is not)."""
    fleet: dict[str, Any] | None = None
    store_failure: dict[str, Any] | None = None
    error: str | None = None
    generator_bound: bool | None = None
    virtual_over_admission: float | None = None
    simulator: dict[str, Any] | None = None
    """A virtual run's figures no log holds (``wall_s``, ``evicted_keys``, ``target_cores``,
    ``downstream_utilisation``): recorded with the run, so the summary row never borrows another's."""
    given: set[str] = field(default_factory=set, repr=False, compare=False)
    """The optional fields a step has given (``add``): only those are written."""

    def add(self, **values: Any) -> RunRecord:
        """Give these fields (a step's measures); a name run.json does not have is a TypeError."""
        for name, value in values.items():
            if name not in RECORD_FIELDS:
                raise TypeError(f"run.json has no field {name!r}")
            setattr(self, name, value)
            if name not in RECORD_ALWAYS:
                self.given.add(name)
        return self

    def get(self, name: str) -> Any:
        """A field's value if it was given (or is always written), else None."""
        return getattr(self, name) if name in RECORD_ALWAYS or name in self.given else None

    def to_json(self) -> dict[str, Any]:
        """The content of run.json (without the schema version): the given fields in order."""
        return {name: getattr(self, name) for name in RECORD_FIELDS if name in RECORD_ALWAYS or name in self.given}

    def write(self, path: Path) -> None:
        write_run_json(path, self.to_json())


RECORD_FIELDS = tuple(f.name for f in fields(RunRecord) if f.name != "given")
RECORD_ALWAYS = frozenset(f.name for f in fields(RunRecord) if f.default is MISSING and f.default_factory is MISSING)


def write_run_json(path: Path, info: dict[str, Any]) -> None:
    """The one writer of run.json: the schema version first, then the run's fields (atomically)."""
    missing = [k for k in RUN_REQUIRED if k not in info]
    if missing:
        raise ValueError(f"run.json needs {', '.join(missing)}")
    write_text(path, json.dumps({"schema": RUN_SCHEMA_VERSION, **info}, indent=2, default=float) + "\n")


def read_run_json(path: Path) -> RunInfo:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RunFileError(f"{path}: not readable JSON ({exc})") from None
    return run_info_of(raw, path)


def run_info_of(raw: Any, path: Path | str) -> RunInfo:
    """run.json's content as the analysis reads it (``path``: where it came from, for the messages);
    the simulator reads a virtual run's record through it before the file exists."""
    if not isinstance(raw, dict):
        raise RunFileError(f"{path}: expected a JSON object")
    missing = [k for k in RUN_REQUIRED if k not in raw]
    if missing:
        raise RunFileError(f"{path}: missing field(s) {', '.join(missing)}")
    if raw["status"] not in RUN_STATUSES:
        raise RunFileError(f"{path}: status must be one of {', '.join(RUN_STATUSES)}, got {raw['status']!r}")
    phases = []
    for i, p in enumerate(raw.get("phases") or []):
        try:
            phases.append(Phase(str(p["name"]), float(p["start_t"]), float(p["end_t"])))
        except (KeyError, TypeError, ValueError):
            raise RunFileError(f"{path}: phases[{i}] needs name, start_t and end_t (numbers)") from None
    return RunInfo(
        status=raw["status"], scenario=str(raw["scenario"]), algorithm=str(raw["algorithm"]), store=str(raw["store"]),
        policy=RunPolicy.from_dict(raw["policy"], str(path)), params=dict(raw.get("params") or {}),
        scenario_params=dict(raw.get("scenario_params") or {}), phases=tuple(phases),
        generator_bound=raw.get("generator_bound"), error=raw.get("error"), system=str(raw.get("system") or SYSTEM_SUITE),
        decided_from=str(raw.get("decided_from") or DECIDED_BY_TARGET),
        decision_uncertainty_ms=(raw.get("round_trip_ms") or {}).get("p99"),
        response=raw.get("response") if isinstance(raw.get("response"), dict) else None,
        processes=int(raw.get("processes") or 1), limiters=str(raw.get("limiters") or "shared"),
        fallback=_fallback(raw.get("degraded"), path),
        degraded_reasons=tuple(str(r) for r in raw.get("degraded_reasons") or ()),
        kind=str(raw.get("kind") or "live"), seed=_count(raw, "seed", path, 0), repeat=_count(raw, "repeat", path, 1),
        trace=str(raw["trace"]) if raw.get("trace") else None,
        gateway=dict(raw["gateway"]) if isinstance(raw.get("gateway"), dict) else None,
        simulator=dict(raw["simulator"]) if isinstance(raw.get("simulator"), dict) else {},
    )


def _count(raw: dict[str, Any], name: str, path: Path, least: int) -> int | None:
    """An optional whole number of run.json (``seed``, ``repeat``): null or absent is None."""
    value = raw.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise RunFileError(f"{path}: {name} must be a whole number >= {least} or null, got {value!r}")
    return value


def _fallback(raw: Any, path: Path) -> dict[str, Any] | None:
    if raw is None:
        return None
    share = raw.get("share") if isinstance(raw, dict) else None
    if not isinstance(share, int | float) or not 0 < share <= 1 or not all(
            isinstance(raw.get(k), int | float) for k in ("start_t", "end_t")):
        raise RunFileError(f"{path}: degraded must be null or an object with share (0..1], start_t and end_t")
    return dict(raw)


def degraded_line(store: str, fallback: dict[str, Any]) -> str:
    """How a degraded run is marked wherever it is shown: the share, by whom, and when."""
    sources = ", ".join(f"{k} {v:,}" for k, v in (fallback.get("sources") or {}).items())
    return (f"degraded: {fallback['share']:.0%} of its decisions came from a fallback, not {store} "
            f"({sources}; over {fallback['end_t'] - fallback['start_t']:.1f} s): its metrics are not {store}'s")
