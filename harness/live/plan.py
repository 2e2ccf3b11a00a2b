"""The plan of a live campaign: its runs, scenario x algorithm x store, each carrying the traffic
model it replays (built once, here, and used by the target config, the runner and the virtual twin)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from contract.schema import SYSTEM_SUITE, peer_run_dir_name, repeat_dir_name, run_dir_name
from contract.stores import StoreChoice
from harness.campaign.live import Campaign, LiveScenario
from harness.campaign.peers import Peer
from scenarios import TrafficModel
from targets.algorithms import Policy, build_params
from targets.stores.redis import SUFFIXES


@dataclass
class LiveRun:
    scenario: LiveScenario
    algorithm: str
    store: str
    """``memory`` or ``redis-<mode>`` (``redis-local-split``: local with L/N per node)."""
    policy: Policy
    params: Any
    joins_s: list[float] = field(default_factory=lambda: [0.0])
    """One entry per target node: the model time from which it takes traffic."""
    routing: str = "round_robin"
    model: TrafficModel = field(kw_only=True)
    """The scenario's model at this run's policy and the campaign's seed."""
    processes: int = 1
    """Server processes per target node (targets/multiprocess.py)."""
    peer: str | None = None
    """A peer target (then ``algorithm`` is its name and the suite's target is only its downstream)."""
    spec: Peer | None = field(default=None, kw_only=True)
    """The peer's campaign side (harness/campaign/peers/): its system, store, model."""
    seed: int = field(default=1, kw_only=True)
    """The seed its model and the Locust workers' replay are built from: the campaign's, plus the repeat's offset."""
    repeat: int = field(default=1, kw_only=True)
    repeats: int = field(default=1, kw_only=True)

    @property
    def name(self) -> str:
        if self.peer is not None:
            return repeat_dir_name(peer_run_dir_name(self.scenario.run_name, self.peer), self.repeat, self.repeats)
        return repeat_dir_name(run_dir_name(self.scenario.run_name, self.algorithm, self.store), self.repeat, self.repeats)

    @property
    def system(self) -> str:
        """Who limits: ``suite`` or the peer's name (the summary's ``system`` column)."""
        return self.spec.system if self.spec else SYSTEM_SUITE

    @property
    def limiters(self) -> str:
        """Whether a node's processes share its limit (``shared``) or each keeps its own
        (``per-process``: the memory store, Redis ``local`` mode, algorithms Redis does not hold)."""
        if self.processes == 1:  # a peer's too: its store ("zone", "external") is no store of the suite's
            return "shared"
        return "shared" if StoreChoice.parse(self.store).shares_limit and self.algorithm in SUFFIXES else "per-process"

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
        stores = [campaign.store_label(st) for st in campaign.stores_for(sc)]
        if store:
            stores = [st for st in stores if StoreChoice.parse(st).under(store)] or [campaign.store_label(store)]
        for algorithm in campaign.algorithms_for(sc):
            for st in stores:
                if only and not {sc.name, sc.run_name, algorithm} & set(only):
                    continue
                runs.append(LiveRun(sc, algorithm, st, policy, campaign.params_for(algorithm, policy, sc), joins, routing,
                                    model=model, processes=campaign.processes_for(sc)))
        for peer in campaign.peer_names:
            if only and not {sc.name, sc.run_name, peer} & set(only):
                continue
            spec = campaign.peer_spec(peer)
            twin = spec.twin(policy)  # its params: the mapped model's (the virtual twin), none without one
            params = campaign.params_for(*twin) if twin else build_params("none", policy)
            runs.append(LiveRun(sc, peer, spec.store, policy, params, model=model, peer=peer, spec=spec))
    return runs
