"""A live run's logs made one: the nodes' decision logs and the Locust workers' client log parts
(the handshake folder is consumed), with how precisely the plan was kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from contract import decision_file
from contract.folder import write_parquet
from contract.schema import (
    CLIENT_FILE,
    CLIENT_PART_GLOB,
    CLIENT_SCHEMA,
    DECISIONS_FILE,
    HANDSHAKE_DIR,
    LATE_SUFFIX,
    READY_GLOB,
    ROLE_PLAN,
)
from harness.processes.target import TargetProcess
from scenarios.live_plan import LivePlan, group_ranges

from .measures import burst_spread, pct_ms
from .supervise import RunFailed, tail


def merge_decisions(run_dir: Path, nodes: list[str], targets: list[TargetProcess]) -> None:
    """The nodes' decision logs, one file in time order (one node writes it directly). A
    node that had to be killed left the parts it had flushed: they are joined into its file."""
    parts = [run_dir / f"decisions-{node}.parquet" for node in nodes] if len(nodes) > 1 else [run_dir / DECISIONS_FILE]
    for part, target in zip(parts, targets):
        if not part.exists() and decision_file.exists(part):
            decision_file.finish(part)
        if not part.exists():  # a node of several processes that had to be killed: their own logs
            decision_file.join_processes(part)
        if not part.exists():
            raise RunFailed(f"the target wrote no decision log:\n{tail(target.stderr_path)}")
    if len(parts) > 1:
        decision_file.join(parts, run_dir / DECISIONS_FILE)


def slowest_ready(client_dir: Path) -> float | None:
    """The latest ready marker's time: when the slowest worker had started up."""
    ready = [float(p.read_text()) for p in client_dir.glob(READY_GLOB)]
    return max(ready) if ready else None


def gather_client(run_dir: Path, plan: LivePlan, landing: bool = True) -> dict[str, Any]:
    """Merge the workers' client logs; measure how precisely the plan was kept (and, with
    ``landing``, how bursts landed at the target: from its decision log's arrival times)."""
    handshake = run_dir / HANDSHAKE_DIR
    parts = sorted(handshake.glob(CLIENT_PART_GLOB))
    if not parts:
        raise RunFailed(f"Locust wrote no client log:\n{tail(run_dir / 'logs' / 'locust.log')}")
    client = pa.concat_tables([pq.read_table(p) for p in parts]).cast(CLIENT_SCHEMA)
    write_parquet(run_dir / CLIENT_FILE, client)
    late = sum(int(p.with_suffix(LATE_SUFFIX).read_text() or 0) for p in parts if p.with_suffix(LATE_SUFFIX).exists())
    for p in handshake.iterdir():  # parts are merged, markers consumed
        p.unlink()
    handshake.rmdir()
    everything = client.to_pandas()
    df = everything[everything["role"] == ROLE_PLAN]
    lag = (df["sent_t"] - df["intended_t"]).to_numpy()
    n_groups = len(group_ranges(plan.arrivals().t, plan.burst_gap_s))
    planned = df["request_id"].str.partition(".")[0]  # a follow-up's planned origin (live_plan.origin_of)
    info: dict[str, Any] = {
        "sent": len(df),
        "planned_sent": int(planned.nunique()),
        "sent_twice": int(df.duplicated(["request_id", "attempt"]).sum()),
        "client_addresses": int(df["client_address"].nunique()),
        "own_requests": {str(k): int(v) for k, v in everything.loc[everything["role"] != ROLE_PLAN, "role"].value_counts().items()},
        "unanswered": int((df["status"] == 0).sum()),
        "late_groups": late,
        "late_share": late / max(1, n_groups),
        "send_lag_ms": {"p50": pct_ms(lag, 50), "p99": pct_ms(lag, 99), "max": pct_ms(lag, 100)},
    }
    if landing:
        info.update(burst_spread(run_dir, plan))
    return info


LOST_WORKER = "failed to send heartbeat"
"""What Locust's master logs when a worker's heartbeats stopped (it then deals that worker's users
to the workers still ready, which replay their share again, or stops the test)."""


def plan_not_kept(record: dict[str, Any], locust_log: Path) -> str | None:
    """Why the generator did not replay the plan exactly, or None: every planned request sent
    once (a follow-up or a retry is a request of its own), and no worker lost by the master."""
    lost = locust_log.read_text(encoding="utf-8", errors="replace").count(LOST_WORKER) if locust_log.is_file() else 0
    planned, sent, twice = record.get("planned_requests"), record.get("planned_sent"), record.get("sent_twice")
    why = []
    if lost:
        why.append(f"the Locust master lost workers {lost} time(s) (heartbeats missed: {locust_log.name})")
    if planned is not None and sent is not None and sent != planned:
        why.append(f"{sent:,} of {planned:,} planned requests were sent")
    if twice:
        why.append(f"{twice:,} were sent twice")
    return "; ".join(why) if why else None
