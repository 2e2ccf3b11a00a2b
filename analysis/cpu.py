"""CPU cost from cpu.csv (psutil samples): target and load-generator CPU per 1,000 requests, and
whether the generator, not the target, was the bottleneck.

Each sample's cpu_percent covers the time since that process's previous sample; a process's first
sample covers nothing (psutil's first reading is 0) and is dropped.
"""

from __future__ import annotations

import pandas as pd

from contract.schema import ROLE_GENERATOR, ROLE_TARGET

GENERATOR_BOUND_PERCENT = 90.0
"""A generator process busy this much of one core on average could not have sent any faster."""
LATE_SHARE_BOUND = 0.05
"""More than this share of send groups released late: the generator could not keep its plan."""


def _intervals(cpu: pd.DataFrame, role: str) -> pd.DataFrame:
    """Per sample of a role: the process, the interval it covers (s) and CPU seconds used in it."""
    sub = cpu.loc[cpu["role"] == role, ["process", "t", "cpu_percent"]].sort_values(["process", "t"], kind="stable")
    dt = sub.groupby("process", sort=False)["t"].diff()
    out = pd.DataFrame({"process": sub["process"], "dt": dt, "busy": dt * sub["cpu_percent"] / 100.0})
    return out.dropna()


def cpu_ms_per_1k(cpu: pd.DataFrame, requests: int) -> dict[str, float | None]:
    """``cpu_target_ms_per_1k`` and ``cpu_generator_ms_per_1k``: CPU milliseconds per 1,000 requests
    (all processes of the role together)."""
    row: dict[str, float | None] = {}
    for role in (ROLE_TARGET, ROLE_GENERATOR):
        spans = _intervals(cpu, role)
        ok = not spans.empty and requests > 0
        row[f"cpu_{role}_ms_per_1k"] = round(float(spans["busy"].sum()) * 1e6 / requests, 3) if ok else None
    return row


def generator_bound(cpu: pd.DataFrame, late_share: float | None = None) -> bool | None:
    """True when any generator process was busy GENERATOR_BOUND_PERCENT of a core over the run,
    or (``late_share``: the runner's count of send groups released late) when more than
    LATE_SHARE_BOUND of the plan went out late; None when neither is known."""
    late = late_share is not None and late_share > LATE_SHARE_BOUND
    spans = _intervals(cpu, ROLE_GENERATOR)
    if spans.empty:
        return True if late else None
    per = spans.groupby("process")[["busy", "dt"]].sum()
    return bool(late or (per["busy"] / per["dt"] * 100.0 >= GENERATOR_BOUND_PERCENT).any())
