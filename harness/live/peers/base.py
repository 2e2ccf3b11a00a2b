"""What every peer target is in a live run: a side under test (harness/live/sides/base.py) made
from its campaign side (``spec``), asked after the load what it tells a client it refuses.

A peer the suite starts (``ProcessPeer``: nginx, haproxy, slowapi) writes its config from the
run's policy, starts as a registered child of the run in front of the run's ``none`` downstream
and gives back its own records as the suite's decision log (DECISION_SCHEMA), so the same metric
code judges it (``PeerSide``). An endpoint the user runs is a peer too (``url.py``): nothing
started, its decisions inferred from the client log.

One module per peer beside this one, registered in ``__init__.py`` under the campaign-side
name (``harness/campaign/peers/``), or by its ``system`` for a peer built from a campaign entry.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pyarrow.parquet as pq

from contract.atomic import write_text
from contract.folder import write_parquet
from contract.schema import DECISION_SCHEMA, DECISIONS_FILE, HANDSHAKE_DIR, ROLE_PROBE, client_part
from harness.campaign.peers import Peer, PeerError
from harness.processes.ports import free_ports
from harness.processes.target import TargetProcess
from scenarios.addresses import PROBE_ADDRESS, on_loopback
from scenarios.live_plan import LivePlan
from targets.algorithms import Policy

from ..config import node_configs, peer_downstream_config
from ..logs import gather_client
from ..sides.base import Side, SideSetup
from ..supervise import Processes
from .response import probe_log, refusal_read, without_probe

UNKNOWN_TO_PEERS = {"cost": 1.0, "remaining": None, "retry_after_s": None, "decision_us": None, "delay_s": 0.0,
                    "ideal_allowed": None, "adaptive_limit": None}
"""What a peer's log does not tell: it counts requests (cost 1) and keeps no tokens, retry time,
decision latency or queueing delay."""
REFUSAL_MARGIN = 50
"""Requests beyond twice the burst the refusal probe may send (refill while it sends)."""


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
    """One peer target, as a live run drives it: the side under test of its runs."""

    spec: Peer
    """Its campaign side: name, binary, the policy it can express, its model."""

    @property
    def refused(self) -> frozenset[int]:
        """The statuses that mean "refused by the limiter" (429)."""
        return frozenset({429})

    @abstractmethod
    def side(self, setup: SideSetup) -> Side:
        """The side under test of one run of this peer."""

    def response_fix(self, policy: Policy) -> str | None:
        """The config lines that make its 429 say when to retry (problem details, Retry-After,
        no-store), shown where a run finds it does not; None when it already does (or its config
        is not the suite's to fix)."""
        return None

    def from_config(self, text: str) -> ProcessPeer:
        """This peer running a user's own config file (``validate --live``)."""
        raise PeerError(f"peer {self.spec.name}: validate --live cannot run a {self.spec.system} config file yet")

    def response(self, url: str, policy: Policy, handshake: Path) -> dict[str, Any]:
        """run.json's ``response``: its refusal as a client reads it at ``url`` after a run's load,
        and the config lines that fix what it does not say (the report shows them). The probe
        sends from its own address; its requests join the client log (a part in ``handshake``)."""
        source = PROBE_ADDRESS if on_loopback(url) else None
        try:
            found = refusal_read(url, int(2 * policy.effective_burst) + REFUSAL_MARGIN, refused=self.refused,
                                 source=source, refill_s=policy.effective_burst * policy.window_s / policy.limit)
        except httpx.HTTPError as exc:
            return {"error": f"the refusal could not be read: {exc!r}"}
        if handshake.is_dir():
            pq.write_table(probe_log(found, source), handshake / client_part(ROLE_PROBE, 0))
        return found.report(self.response_fix(policy), self.refused)


class ProcessPeer(LivePeer):
    """A peer the suite starts: its config file, its command, its records read back."""

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

    def side(self, setup: SideSetup) -> Side:
        return PeerSide(self, setup)

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


class PeerSide(Side):
    """A started peer in front of a suite target with the ``none`` algorithm (the downstream):
    the load goes to the peer, its own records are the run's decisions."""

    def __init__(self, live: ProcessPeer, setup: SideSetup) -> None:
        super().__init__(setup)
        self.live = live
        self.start_s = live.spec.start_s
        self.downstream_port, self.downstream_admin, self.port = free_ports(3, setup.reserved)
        self.configs: list[Path] = []

    def hosts(self) -> list[str]:
        return [f"http://127.0.0.1:{self.port}"]

    def configure(self, start_at: float) -> None:
        setup = self.setup
        config = peer_downstream_config(setup.run, setup.campaign, start_at, setup.run_dir)
        self.configs = node_configs(config, setup.run.nodes, [self.downstream_admin], setup.run_dir)

    def start(self) -> list[tuple[str, TargetProcess]]:
        setup, run = self.setup, self.setup.run
        downstream = setup.processes.start_targets(self.configs, [self.downstream_port], [self.downstream_admin],
                                                   setup.logs, None)[0]
        self.started = [downstream]
        env = {**os.environ, "REDIS_URL": setup.redis_url()} if self.live.spec.uses_redis else None
        peer = self.live.start(setup.processes, run.policy, port=self.port, downstream_port=self.downstream_port,
                               run_dir=setup.run_dir, env=env)
        self.started = [peer, downstream]
        return [("target:downstream", downstream), ("target:node-1", peer)]

    def response(self) -> dict[str, Any] | None:
        return self.live.response(self.hosts()[0], self.setup.run.policy, self.setup.run_dir / HANDSHAKE_DIR)

    def results(self, plan: LivePlan) -> dict[str, Any]:
        """Its decisions from its own records (the refusal probe's requests left out)."""
        store = self.setup.run.limiter.store_label
        write_parquet(self.setup.run_dir / DECISIONS_FILE, without_probe(self.live.decisions(self.setup.logs, store=store)))
        return gather_client(self.setup.run_dir, plan)
