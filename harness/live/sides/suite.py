"""The suite's own limiter as the side under test: the run's K target nodes, each its own process
group and decision log, on the run's store (REDIS_URL given when the store mode shares Redis)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from harness.processes.ports import free_ports
from harness.processes.target import HOST, TargetProcess
from scenarios.live_plan import LivePlan

from ..config import node_configs, target_config
from ..logs import gather_client, merge_decisions
from .base import Side, SideSetup


class SuiteSide(Side):
    live_counters = True

    def __init__(self, setup: SideSetup) -> None:
        super().__init__(setup)
        self.nodes = setup.run.nodes
        self.configs: list[Path] = []
        self.stopped: list[TargetProcess] = []
        ports = free_ports(2 * len(self.nodes), setup.reserved)
        self.ports, self.admin_ports = ports[:len(self.nodes)], ports[len(self.nodes):]

    def hosts(self) -> list[str]:
        return [f"http://{HOST}:{port}" for port in self.ports]

    def configure(self, start_at: float) -> None:
        setup = self.setup
        config = target_config(setup.run, setup.campaign, start_at, setup.run_dir)
        self.configs = node_configs(config, self.nodes, self.admin_ports, setup.run_dir)

    def start(self) -> list[tuple[str, TargetProcess]]:
        setup = self.setup
        shared = setup.run.suite.store.resolved(setup.campaign.redis.mode).shares_limit  # local mode needs no Redis
        env = {**os.environ, "REDIS_URL": setup.redis_url()} if shared else None
        cap = setup.campaign.scale.max_connections
        extra = (["--max-connections", str(cap)] if cap else []) + ["--server", setup.campaign.server]
        self.started = setup.processes.start_targets(self.configs, self.ports, self.admin_ports, setup.logs, env, extra)
        return [(f"target:{node}", target) for node, target in zip(self.nodes, self.started)]

    @property
    def counters_url(self) -> str | None:
        return f"{self.started[0].admin_url}/_bench/counters" if self.started else None

    def stop(self) -> None:
        self.stopped = list(self.started)  # their decision logs are merged next
        super().stop()

    def results(self, plan: LivePlan) -> dict[str, Any]:
        merge_decisions(self.setup.run_dir, self.nodes, self.stopped)
        return gather_client(self.setup.run_dir, plan)
