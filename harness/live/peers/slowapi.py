"""The slowapi peers of a live run: the app's config (the policy as a limits rate string, the
strategy, the storage) and its decision log, written by the app itself in DECISION_SCHEMA
(targets/peers/slowapi_app.py records every ``limits`` hit slowapi makes)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pyarrow as pa

from contract import decision_file
from contract.schema import DECISION_SCHEMA
from harness.campaign.peers.slowapi import SLOWAPI_PEERS, Slowapi, limit_string
from targets.algorithms import Policy

from .base import ProcessPeer

CONFIG = "slowapi.json"
"""Beside target.yaml (the downstream's config) in the run folder."""
DECISION_LOG = "slowapi-decisions.parquet"
"""Under logs/; the runner makes it the run's decisions.parquet."""


class SlowapiPeer(ProcessPeer):
    config_file = CONFIG

    def __init__(self, spec: Slowapi) -> None:
        self.spec = spec

    def config(self, policy: Policy, *, port: int, downstream_port: int, run_dir: Path) -> str:
        """Its keys under a prefix of the run's own: runs on one Redis never see each other's counters."""
        spec = self.spec
        assert isinstance(spec, Slowapi)
        return json.dumps({
            "limit": limit_string(policy), "strategy": spec.strategy, "store": spec.store, "algorithm": spec.name,
            "port": port, "downstream_port": downstream_port, "key_prefix": f"rb{time.time_ns()}",
            "decision_log": str(run_dir / "logs" / DECISION_LOG)}, indent=2) + "\n"

    def command(self, executable: str | None, conf: Path, run_dir: Path) -> list[str]:
        return [sys.executable, "-m", "targets.peers.slowapi_app", "--config", str(conf)]

    def decisions(self, logs: Path, *, store: str) -> pa.Table:
        """Its log, finished from the flushed parts if it was killed; empty if it wrote none."""
        path = logs / DECISION_LOG
        if not decision_file.exists(path):
            return DECISION_SCHEMA.empty_table()
        if not path.is_file():
            decision_file.finish(path)
        return decision_file.read_table(path).sort_by("t")


SLOWAPI_LIVE = tuple(SlowapiPeer(spec) for spec in SLOWAPI_PEERS)
