"""What every peer target does in a live run: write its config from the run's policy, start as a
registered child of the run in front of the run's downstream, and give back its own records as
the suite's decision log (DECISION_SCHEMA), so the same metric code judges it.

One module per peer beside this one, registered in ``__init__.py`` under the campaign-side
name (``harness/campaign/peers/``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path

import pyarrow as pa

from contract.atomic import write_text
from contract.schema import DECISION_SCHEMA
from harness.campaign.peers import Peer, PeerError
from targets.algorithms import Policy
from targets.process import TargetProcess

from ..supervise import Processes

UNKNOWN_TO_PEERS = {"cost": 1.0, "remaining": None, "retry_after_s": None, "decision_us": None, "delay_s": 0.0,
                    "ideal_allowed": None, "adaptive_limit": None}
"""What a peer's log does not tell: it counts requests (cost 1) and keeps no tokens, retry time,
decision latency or queueing delay."""


def peer_decisions(rows: list[dict]) -> pa.Table:
    """A peer log's rows (the columns it knows) as DECISION_SCHEMA in decision-time order; the
    columns it does not know as ``UNKNOWN_TO_PEERS``, and ``arrived_t`` its decision time."""
    columns: dict[str, list] = {name: [] for name in DECISION_SCHEMA.names}
    for row in rows:
        full = {**UNKNOWN_TO_PEERS, "arrived_t": row["t"], **row}
        for name in DECISION_SCHEMA.names:
            columns[name].append(full[name])
    return pa.table(columns, schema=DECISION_SCHEMA).sort_by("t")


class LivePeer(ABC):
    """One peer target, as a live run drives it."""

    spec: Peer
    """Its campaign side: name, binary, the policy it can express, its model."""
    config_file: str
    """Its config, written in the run folder beside the downstream's target.yaml."""
    error_log: str | None = None
    """The file under logs/ whose tail says why it did not start; None: its output (``output``)."""

    @property
    def output(self) -> str:
        """The file under logs/ its stdout and stderr go to."""
        return f"{self.spec.name}.stderr"

    @abstractmethod
    def config(self, policy: Policy, *, port: int, downstream_port: int, run_dir: Path) -> str:
        """The whole config file of one run, listening on 127.0.0.1:``port`` and proxying to the
        downstream on ``downstream_port``; it logs under ``run_dir / "logs"``."""

    @abstractmethod
    def command(self, executable: str | None, conf: Path, run_dir: Path) -> list[str]:
        """The foreground command that runs it with ``conf``."""

    @abstractmethod
    def decisions(self, logs: Path, *, store: str) -> pa.Table:
        """Its records of the run (under ``logs``) as DECISION_SCHEMA rows in decision-time order."""

    def response_fix(self, policy: Policy) -> str | None:
        """The config lines that make its 429 say when to retry (problem details, Retry-After,
        no-store), shown where a run finds it does not; None when it already does."""
        return None

    def from_config(self, text: str) -> LivePeer:
        """This peer running a user's own config file (``validate --live``)."""
        raise PeerError(f"peer {self.spec.name}: validate --live cannot run a {self.spec.system} config file yet")

    def start(self, processes: Processes, policy: Policy, *, port: int, downstream_port: int,
              run_dir: Path, env: dict[str, str] | None = None) -> TargetProcess:
        """Config written, process started and registered at once, ready when its ``/healthz``
        (proxied to the downstream) answers; a RunFailed with its error log's tail otherwise.
        ``env``: its environment (REDIS_URL for a peer that ``uses_redis``), else ours."""
        conf = run_dir / self.config_file
        write_text(conf, self.config(policy, port=port, downstream_port=downstream_port, run_dir=run_dir))
        logs = run_dir / "logs"
        return processes.start_peer(self.spec.name, self.command(self.spec.executable(), conf, run_dir), port,
                                    logs / self.output, logs / (self.error_log or self.output), env)
