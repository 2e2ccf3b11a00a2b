"""run.json: what a live run was (scenario, algorithm, store, policy, phases) and how it ended.

The campaign runner writes it with ``write_run_json`` and the analysis reads it with
``read_run_json``, both here (schema constants in ``schema.py``, documented in docs/analysis.md);
simulation runs have none, and the loader derives the same facts from the run folder's name and
campaign.yaml.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
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

    kind: str = "live"
    """``live``, or ``virtual`` (contract.schema.KIND_VIRTUAL): a simulated run with the system model."""

    @property
    def degraded(self) -> Phase | None:
        return next((p for p in self.phases if p.name == DEGRADED_PHASE), None)


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
        kind=str(raw.get("kind") or "live"),
    )


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
