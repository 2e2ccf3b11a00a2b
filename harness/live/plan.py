"""The plan of a live campaign: its runs, scenario x (algorithm x store, or peer), each carrying the
limiter under test, typed (the suite's algorithm on a ``StoreChoice``, or a peer), and the traffic
model it replays (built once, here, and used by the target config, the runner and the virtual twin)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from contract.schema import SYSTEM_SUITE, peer_run_dir_name, repeat_dir_name, run_dir_name
from contract.stores import StoreChoice
from harness.campaign.live import Campaign, LiveScenario
from harness.campaign.peers import Peer
from scenarios import TrafficModel
from targets.algorithms import Policy, build_params
from targets.stores.redis import SUFFIXES


@dataclass(frozen=True)
class SuiteLimiter:
    """The suite's own limiter under test: one of its algorithms on one of its stores."""

    algorithm: str
    store: StoreChoice
    """Resolved: a plain ``redis`` entry is already the campaign's mode."""
    system: ClassVar[str] = SYSTEM_SUITE

    @property
    def label(self) -> str:
        """run.json's and the summary's ``algorithm``."""
        return self.algorithm

    @property
    def store_label(self) -> str:
        return self.store.label

    @property
    def shares_limit(self) -> bool:
        """A node's processes share one limit: a Redis mode other than local, for an algorithm Redis holds."""
        return self.store.shares_limit and self.algorithm in SUFFIXES

    def dir_name(self, scenario: str) -> str:
        return run_dir_name(scenario, self.algorithm, self.store.label)


@dataclass(frozen=True)
class PeerLimiter:
    """A peer target under test (harness/campaign/peers/): the suite's target is only its downstream."""

    peer: Peer

    @property
    def label(self) -> str:
        """run.json's and the summary's ``algorithm``: the peer's name."""
        return self.peer.name

    @property
    def store_label(self) -> str:
        """The peer's own (``zone``, limits' ``memory`` or ``redis``, ``external``): no store of the suite's."""
        return self.peer.store

    @property
    def system(self) -> str:
        return self.peer.system

    @property
    def shares_limit(self) -> bool:
        """The peer runs one process: its limit is its own."""
        return True

    def dir_name(self, scenario: str) -> str:
        return peer_run_dir_name(scenario, self.peer.name)


Limiter = SuiteLimiter | PeerLimiter
"""What a live run puts under test."""


@dataclass
class LiveRun:
    scenario: LiveScenario
    limiter: Limiter
    policy: Policy
    params: Any
    joins_s: list[float] = field(default_factory=lambda: [0.0])
    """One entry per target node: the model time from which it takes traffic."""
    routing: str = "round_robin"
    model: TrafficModel = field(kw_only=True)
    """The scenario's model at this run's policy and the campaign's seed."""
    processes: int = 1
    """Server processes per target node (targets/multiprocess.py)."""
    seed: int = field(default=1, kw_only=True)
    """The seed its model and the Locust workers' replay are built from: the campaign's, plus the repeat's offset."""
    repeat: int = field(default=1, kw_only=True)
    repeats: int = field(default=1, kw_only=True)

    @property
    def name(self) -> str:
        return repeat_dir_name(self.limiter.dir_name(self.scenario.run_name), self.repeat, self.repeats)

    @property
    def system(self) -> str:
        """Who limits: ``suite`` or the peer's name (the summary's ``system`` column)."""
        return self.limiter.system

    @property
    def suite(self) -> SuiteLimiter:
        """The suite's limiter of a suite run (the target config is built from it); a peer run has
        none of its own (its downstream: ``config.peer_downstream_config``)."""
        if not isinstance(self.limiter, SuiteLimiter):
            raise TypeError(f"{self.name}: a peer run has no suite limiter")
        return self.limiter

    @property
    def limiters(self) -> str:
        """Whether a node's processes share its limit (``shared``) or each keeps its own
        (``per-process``: the memory store, Redis ``local`` mode, algorithms Redis does not hold)."""
        return "shared" if self.processes == 1 or self.limiter.shares_limit else "per-process"

    @property
    def nodes(self) -> list[str]:
        return [f"node-{i + 1}" for i in range(len(self.joins_s))]


def plan_runs(campaign: Campaign, only: list[str] | None = None, store: str | None = None,
              repeats: int | None = None) -> list[LiveRun]:
    """Every scenario x algorithm x store, ``repeats`` times (default: the campaign's), repeat k at
    the seed offset k - 1, the repeats of a run one after the other; ``store`` keeps a scenario's
    entries of that store (``redis`` matches every redis mode), or runs it on that store alone when it has none."""
    n = repeats or campaign.repeats
    runs = []
    for run in _plan_once(campaign, only, store):
        for k in range(1, n + 1):
            model = run.model if k == 1 else campaign.model_for(run.scenario, k - 1)
            runs.append(replace(run, model=model, seed=campaign.seed + k - 1, repeat=k, repeats=n))
    return runs


def _plan_once(campaign: Campaign, only: list[str] | None, store: str | None) -> list[LiveRun]:
    runs = []
    for sc in campaign.scenarios:
        policy = campaign.policy_for(sc)
        model = campaign.model_for(sc)
        fleet = model.fleet()
        joins = list(fleet.joins_s) if fleet is not None else [0.0] * campaign.nodes
        routing = fleet.routing if fleet is not None else campaign.routing
        stores = [campaign.store_choice(st) for st in campaign.stores_for(sc)]
        if store:
            stores = [st for st in stores if st.under(store)] or [campaign.store_choice(store)]
        for algorithm in campaign.algorithms_for(sc):
            for st in stores:
                if only and not {sc.name, sc.run_name, algorithm} & set(only):
                    continue
                runs.append(LiveRun(sc, SuiteLimiter(algorithm, st), policy, campaign.params_for(algorithm, policy, sc),
                                    joins, routing, model=model, processes=campaign.processes_for(sc)))
        for peer in campaign.peer_names:
            if only and not {sc.name, sc.run_name, peer} & set(only):
                continue
            spec = campaign.peer_spec(peer)
            twin = spec.twin(policy)  # its params: the mapped model's (the virtual twin), none without one
            params = campaign.params_for(*twin) if twin else build_params("none", policy)
            runs.append(LiveRun(sc, PeerLimiter(spec), policy, params, model=model))
    return runs
