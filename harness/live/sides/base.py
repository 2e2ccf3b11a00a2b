"""The side under test of a live run: what the load is sent to and what decided it.

Every kind of side answers the runner the same way, in this order: ``hosts()`` (ports chosen,
the URLs the plan sends to), ``configure(start_at)`` (its config files, once the plan's start is
known), ``start()`` (its processes started, registered and ready), ``response()`` after the load
(a peer's refusal as a client reads it), ``stop()``, then ``results(plan)``: the run's
decisions.parquet and client.parquet written, and the run.json fields they give. The runner knows
nothing else of it. Kinds: the suite's own nodes (``suite.py``), a peer the suite starts in front
of a ``none`` downstream and an endpoint the user runs (``harness/live/peers/``: ``LivePeer.side``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.campaign.live import Campaign
from harness.processes.target import TargetProcess
from scenarios.live_plan import LivePlan

from ..plan import LiveRun
from ..supervise import Processes


@dataclass(frozen=True)
class SideSetup:
    """What every side of a run is given."""

    run: LiveRun
    campaign: Campaign
    run_dir: Path
    processes: Processes
    """The runner's register of children: whatever a side starts is stopped however the run ends."""
    redis_url: Callable[[], str]
    """The Redis of the campaign (the runner's own redis-server started on first use)."""
    reserved: frozenset[int] = frozenset()
    """Ports the side must not choose: the remote master's, bound once the side's ports are chosen."""

    @property
    def logs(self) -> Path:
        return self.run_dir / "logs"


class Side(ABC):
    """One kind of side under test (see the module's docstring for the order of the calls)."""

    start_s: float = 0.0
    """Seconds its processes need beyond the runner's lead (a peer's Python imports)."""
    live_counters: bool = False
    """It answers ``/_bench/counters`` while the load is on; otherwise the runner counts its
    decisions from decisions.parquet once it has them."""
    outlives_run: bool = False
    """Nobody starts or stops it (a url endpoint): its limiter keeps every run's state, so each run
    sends from client addresses and API keys of its own (``LivePlan.address_block``, ``key_prefix``)."""

    def __init__(self, setup: SideSetup) -> None:
        self.setup = setup
        self.started: list[TargetProcess] = []
        """Its processes, watched by the runner while the load is on (one dying fails the run)."""

    @abstractmethod
    def hosts(self) -> list[str]:
        """The URLs the plan sends to (ports chosen here, once)."""

    def configure(self, start_at: float) -> None:  # noqa: B027 (optional: a side with no files of its own)
        """Its config files for a plan whose t = 0 is ``start_at``; nothing by default."""

    @abstractmethod
    def start(self) -> list[tuple[str, TargetProcess]]:
        """Its processes started and ready, each with the name cpu.csv gives it (``target:<node>``)."""

    @property
    def counters_url(self) -> str | None:
        """Where its live counters answer (``live_counters``)."""
        return None

    def response(self) -> dict[str, Any] | None:
        """run.json's ``response`` after the load: what it tells a client it refuses; None: not asked."""
        return None

    def stop(self) -> None:
        """Its processes stopped (SIGTERM: they flush their logs)."""
        for target in self.started:
            self.setup.processes.stop_target(target)
        self.started = []

    @abstractmethod
    def results(self, plan: LivePlan) -> dict[str, Any]:
        """decisions.parquet and client.parquet written in the run folder; the run.json fields
        they give (the client log's measures, where the decisions came from)."""
