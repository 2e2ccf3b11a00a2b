"""A node of two processes on one port (``--processes 2``, SO_REUSEPORT), over real HTTP: both
answer, each keeps its own count on the memory store (exactly L each, by hand), the admin port
sums them, the decision logs are joined on stop, and no process outlives the node."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import httpx
import pandas as pd
import psutil

from contract import decision_file
from harness.processes.target import TargetProcess
from tests.poll import until

LIMIT = 3
ROUND = 20
ROUNDS = 10
"""Requests are sent on fresh connections, ROUND at a time, until each process has decided
more than the limit (the kernel picks the process per connection)."""


FLUSHED_WITHIN_S = 30.0
"""A bound on waiting, not a measured threshold."""


def node_args(log: Path, *extra: str) -> list[str]:
    return ["--processes", "2", "--algorithm", "fixed_window", "--limit", str(LIMIT), "--window", "600",
            "--service-ms", "0", "--decision-log", str(log), *extra]


def per_process(target: TargetProcess) -> tuple[dict, list[int]]:
    """The node's counters and each process's decisions on the per-client limit."""
    counters = httpx.get(f"{target.admin_url}/_bench/counters", timeout=5).json()
    return counters, [p["limits"]["per-client"]["decisions"] for p in counters["processes"]]


def fill_both(target: TargetProcess, above: int) -> list[int]:
    """Statuses of requests for key ``k``, each on its own connection, until both processes
    decided more than ``above``."""
    statuses: list[int] = []
    for _ in range(ROUNDS):
        statuses += [httpx.get(f"{target.url}/api/items", headers={"x-api-key": "k"}).status_code for _ in range(ROUND)]
        if min(per_process(target)[1]) > above:
            return statuses
    raise AssertionError(f"one process got (almost) no connection: {per_process(target)[1]}")


def family(target: TargetProcess) -> list[psutil.Process]:
    return [psutil.Process(target.pid), *psutil.Process(target.pid).children(recursive=True)]


def gone(procs: list[psutil.Process]) -> bool:
    return all(not p.is_running() or p.status() == psutil.STATUS_ZOMBIE for p in procs)


def by_process(log: Path) -> dict[str, list[bool]]:
    """The joined log's decisions per process (the prefix of the request ids it made up), in
    each process's own order."""
    df = pd.read_parquet(log)
    df[["process", "seq"]] = df["request_id"].str.rsplit("-", n=1, expand=True)
    df["seq"] = df["seq"].astype(int)
    return {p: list(g.sort_values("seq")["allowed"]) for p, g in df.groupby("process")}


def test_memory_node_of_two_processes_keeps_a_count_per_process(start, tmp_path):
    log = tmp_path / "decisions.parquet"
    target = start(*node_args(log))
    procs = family(target)
    assert len(procs) == 3  # the supervisor and its two servers
    statuses = fill_both(target, LIMIT)
    counters, decided = per_process(target)
    assert [p["limits"]["per-client"]["rejections"] for p in counters["processes"]] == [n - LIMIT for n in decided]
    node = counters["limits"]["per-client"]
    assert (node["decisions"], node["rejections"]) == (len(statuses), len(statuses) - 2 * LIMIT)
    assert statuses.count(200) == 2 * LIMIT  # N local limiters: the node admits N x L
    admin = target.admin_url
    for process in (0, 1):  # each process's own state: its window's count is L
        state = httpx.get(f"{admin}/_bench/state", params={"limit": "per-client", "key": "api_key:k", "process": process})
        assert state.json()["state"][1] == LIMIT
    assert httpx.get(f"{admin}/_bench/state", params={"limit": "per-client", "key": "k", "process": 2}).status_code == 404
    assert httpx.post(f"{admin}/_bench/health", json={"health": "outage"}).status_code == 200
    assert [p["downstream"]["health"] for p in per_process(target)[0]["processes"]] == ["outage", "outage"]

    assert target.stop() == 0
    assert gone(procs)
    assert decision_file.process_paths(log) == []
    got = by_process(log)
    assert sorted(got) == ["node-1.p0", "node-1.p1"]
    for process, n in zip(sorted(got), decided):
        assert got[process] == [True] * LIMIT + [False] * (n - LIMIT)


def test_supervisor_killed_takes_its_processes_and_leaves_their_flushed_logs(start, tmp_path):
    log = tmp_path / "decisions.parquet"
    target = start(*node_args(log))
    procs = family(target)
    statuses = fill_both(target, 0)
    flushed = until(lambda: per_process(target)[0]["decision_log"]["written"] >= len(statuses),  # each flushes every second
                    FLUSHED_WITHIN_S)
    assert flushed, "the processes flushed no decision log"
    os.kill(target.pid, signal.SIGKILL)  # the supervisor alone: its processes follow it
    psutil.wait_procs(procs[1:], timeout=10)
    assert gone(procs)
    assert len(decision_file.process_paths(log)) == 2
    assert decision_file.join_processes(log)
    assert len(pd.read_parquet(log)) == len(statuses)
