"""The decision log: its flusher imports nothing mid-run (pyarrow's first conversion of Python
objects imports pandas, ~380 modules, a long GIL hold, so ``start`` pays it up front); a SIGKILL
loses no flushed row; an earlier run's log never survives a new start."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pyarrow.parquet as pq
import pytest

from contract import decision_file
from contract.schema import DECISION_SCHEMA
from tests.poll import until

SCRIPT = """
import sys, time
from pathlib import Path
from targets.decision_log import DecisionLog
log = DecisionLog(Path(sys.argv[1]))
log.start()
before = set(sys.modules)
log.rows.append((time.time(), "node-1", "fixed_window", "memory", "per-client", "ip:127.0.0.1", 1.0, True, 4.0,
                 0.0, 1.5, None, "r-1", None, "items", 0.0, None, "memory", None, time.time()))
log._flush()
log.close()
print(sorted(set(sys.modules) - before))
"""


@pytest.mark.process
def test_the_first_flush_imports_nothing(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "log.parquet")], capture_output=True,
                         text=True, check=True, cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.strip() == "[]"
    assert (tmp_path / "log.parquet").exists()


def _written(target) -> int:
    return httpx.get(target.admin_url + "/_bench/counters", timeout=10).json()["decision_log"]["written"]


def test_sigkill_keeps_every_row_flushed_before_it(start, tmp_path: Path) -> None:
    """Three flush intervals of requests, each seen on disk before the next; then SIGKILL: the
    log holds all of them (a kill loses at most the interval it interrupts)."""
    path = tmp_path / "decisions.parquet"
    config = tmp_path / "target.json"
    config.write_text(json.dumps({"decision_log": {"path": str(path), "flush_every_s": 0.2}}))
    target = start("--config", str(config), "--limit", "1000", "--service-ms", "0")
    sent = []
    with httpx.Client(base_url=target.url, timeout=10) as client:
        for flush in range(3):
            for i in range(10):
                sent.append(f"req-{flush}-{i}")
                client.get("/api/items", headers={"x-request-id": sent[-1]})
            assert until(lambda: _written(target) >= len(sent), 20), "the flusher never wrote"
    os.killpg(target.pid, signal.SIGKILL)
    target.process.wait()
    assert not path.exists() and len(decision_file.parts(path)) >= 3  # one flush at least per round
    table = decision_file.read_table(path)
    assert table.schema.equals(DECISION_SCHEMA) and sorted(table.column("request_id").to_pylist()) == sorted(sent)
    decision_file.finish(path)  # what the live runner does with a killed node's log
    assert sorted(pq.read_table(path).column("request_id").to_pylist()) == sorted(sent)
    assert not decision_file.parts_dir(path).exists()


def test_an_earlier_log_at_the_path_is_gone_when_a_target_starts(start, tmp_path: Path) -> None:
    path = tmp_path / "decisions.parquet"
    path.write_bytes(b"an earlier run's log")
    decision_file.parts_dir(path).mkdir()
    (decision_file.parts_dir(path) / "part-000001.parquet").write_bytes(b"an earlier run's part")
    target = start("--decision-log", str(path), "--limit", "1000", "--service-ms", "0")
    assert not path.exists() and decision_file.parts(path) == []
    httpx.get(target.url + "/api/items", headers={"x-request-id": "only"}, timeout=10)
    assert target.stop() in (0, -15)
    assert pq.read_table(path).column("request_id").to_pylist() == ["only"]
