"""Live campaign files (YAML, validated with pydantic): algorithms x stores x scenarios, the
policy, the scale, the downstream. Everything is checked before anything starts: one message
with the field's path, exit 2."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator

from contract.stores import STORE_CHOICES, STORE_LABELS, RedisMode, StoreChoice
from targets.algorithms import Policy

from .config_file import CampaignHeader, ScenarioEntry, read_yaml, validate_model
from .peers import PEERS, Peer, PeerError
from .peers.own_file import ConfigPeer, ConfigPeerEntry
from .peers.url import UrlPeer, UrlPeerEntry

StoreName = Literal[STORE_LABELS]  # type: ignore[valid-type]  # the labels of contract.stores, spelled there once
"""``memory``, or the redis store in a mode: ``redis`` is the campaign's ``redis.mode``;
``redis-local-split`` is local mode with L/N per node (``contract.stores.StoreChoice``)."""


def _peer_form(item: Any) -> str:
    """Which form a ``peers:`` item is in, for pydantic's discriminator (a dict with ``config`` is a file peer)."""
    if isinstance(item, str):
        return "name"
    return "file" if isinstance(item, ConfigPeerEntry) or (isinstance(item, dict) and "config" in item) else "endpoint"


PeerItem = Annotated[Annotated[str, Tag("name")] | Annotated[UrlPeerEntry, Tag("endpoint")]
                     | Annotated[ConfigPeerEntry, Tag("file")], Discriminator(_peer_form)]
"""A ``peers:`` item: a peer's name, an endpoint of the user's, or a peer running the user's own
config file ``{name, config}`` (errors then name its fields)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LiveScenario(ScenarioEntry):
    """A scenario entry (the same as a simulation campaign's) plus what only a live run has."""

    stores: list[StoreName] | None = None
    """Replaces the campaign's stores for this scenario (e.g. the modes of multi_node)."""
    target: dict[str, Any] = Field(default_factory=dict)
    """Target config keys (targets.config.TargetConfig) merged over the runner's defaults, e.g.
    a key policy (``keys: {trusted_proxies: 1}``) or layered ``limits``; checked when the target
    starts (a bad value fails that run, named in its log)."""
    processes: int | None = Field(default=None, ge=1, le=64)
    """Replaces the campaign's ``processes`` for this scenario."""


class Scale(_Strict):
    workers: int = Field(default=1, ge=1, le=64)
    """Locust worker processes (Locust's master/worker mode when more than 1)."""
    lead_s: float = Field(default=2.5, gt=0)
    """Seconds between starting a run and the plan's t = 0 (Locust start-up, warm-up)."""
    drain_s: float = Field(default=1.5, ge=0)
    """Seconds after the last planned send for replies to arrive."""
    pin: bool = False
    """Run the targets and the generator on disjoint halves of the cores (harness/live/cpus.py):
    on a small machine the scheduler otherwise queues a woken target behind the generator."""
    auto: bool = False
    """Size the workers, the processes per node and the connection cap from the machine's cores, the
    cost of a request on each side and the plan's peak rate (harness/live/autoscale.py); a value the
    file gives stays. ``run`` prints what it chose and campaign.yaml keeps it."""
    max_connections: int | None = Field(default=None, ge=16, le=1_000_000)
    """Connections one target process holds open (its ``--max-connections``; default 4,096)."""


class DownstreamSettings(_Strict):
    """The simulated service behind the limiter (targets/downstream.py), live and virtual; bounded
    as validate's ``downstream:`` is, so a run cannot be sized or scheduled past what it can hold."""

    concurrency: int = Field(default=16, ge=1, le=10_000_000)
    """Slots served at once: the simulator keeps one free time per slot (80 MB at the bound;
    validate's latency check asks up to 64 x a policy's 100,000)."""
    median_ms: float = Field(default=10.0, ge=0, le=60_000, allow_inf_nan=False)
    sigma: float = Field(default=0.5, ge=0, le=5, allow_inf_nan=False)
    """The lognormal's spread: exp(5 z) is already 1e13 x the median at z = 6."""


class RedisOptions(_Strict):
    """How runs on the redis store use it (docs/redis.md); the server is the runner's own
    redis-server unless ``url`` or REDIS_URL names one."""

    url: str | None = None
    mode: RedisMode = "shared"
    """The mode of a plain ``redis`` store entry."""
    batch: int = Field(default=10, ge=1)
    """Leased mode: tokens per lease."""
    timeout_s: float = Field(default=0.05, gt=0)
    retry_s: float = Field(default=0.5, gt=0)
    """Probe interval during an outage."""
    fail_open: bool = True


class Campaign(CampaignHeader):
    stores: list[StoreName] = Field(default_factory=lambda: ["memory"])
    redis: RedisOptions = RedisOptions()
    scenarios: list[LiveScenario] = Field(min_length=1)
    nodes: int = Field(default=1, ge=1)
    """Target nodes per run; more than one needs a shared store (the Redis store). A scenario
    with its own fleet (multi_node) sets its own."""
    processes: int = Field(default=1, ge=1, le=64)
    """Server processes per target node, on the node's one port (targets/multiprocess.py). On a
    shared Redis mode they share the node's limit; on the memory store (and ``redis-local``) each
    process is a local limiter of its own: the node admits up to processes x L (run.json says
    ``limiters: per-process`` and the virtual twin is a fleet of that many local limiters)."""
    server: Literal["tuned", "stock"] = "tuned"
    """The suite targets' server: ``tuned`` (the bounded protocol deciding as a head is parsed) or
    ``stock`` (uvicorn's own Server and protocol, the middleware deciding: the FastAPI app as a user
    runs it; one process). run.json's ``server`` says which a run measured."""
    routing: Literal["round_robin", "sticky"] = "round_robin"
    """How requests are dealt over the nodes (sticky: by a hash of the client id)."""
    scale: Scale = Scale()
    downstream: DownstreamSettings = DownstreamSettings()
    peers: list[PeerItem] = Field(default_factory=list)
    """Peer targets (harness/campaign/peers/) every scenario also runs on, beside ``algorithms``:
    run ``<scenario>__<peer>``, in front of a suite downstream with the settings above; an
    endpoint the user runs, ``{name, url, reject_status, claims}`` (peers/url.py), judged client-side;
    or a product running the user's own file, ``{name, config}`` (peers/own_file.py), judged by the
    file's first limit, which every scenario's policy must then be."""

    @model_validator(mode="after")
    def _runs_are_buildable(self) -> Campaign:
        """What only live runs need: fleets on a shared store, Redis for store outages (the
        entries themselves are checked by CampaignHeader). Pure: nothing here looks at the machine
        or the network (harness/live/preflight.py does, once, before a campaign starts)."""
        if self.nodes > 1 and set(self.stores) == {"memory"}:
            raise ValueError("nodes: more than one node needs a shared store; the memory store is per process")
        if self.server == "stock" and max([self.processes, *(sc.processes or 1 for sc in self.scenarios)]) > 1:
            raise ValueError("server: stock serves one process per node (uvicorn's own Server); set processes: 1")
        for sc in self.scenarios:
            if "processes" in sc.target:
                raise ValueError(f"{sc.where}.target.processes: set processes on the entry itself (processes: N)")
            model = self.model_for(sc)
            fleet = model.fleet()
            if fleet is not None and fleet.nodes > 1 and "memory" in self.stores_for(sc):
                raise ValueError(f"{sc.where}.stores: {sc.name} runs {fleet.nodes} nodes; the memory store is per process "
                                 f"(use {StoreChoice('redis', 'local').label} for independent nodes)")
            if model.outage() is not None and not all(self.store_choice(st).shares_limit for st in self.stores_for(sc)):
                shared = [c.label for c in STORE_CHOICES if c.shares_limit and c.mode is not None]
                raise ValueError(f"{sc.where}.stores: {sc.name} stops Redis mid-run; it needs {', '.join(shared)}")
        self._peers_can_run()
        return self

    @property
    def peer_names(self) -> list[str]:
        return [p if isinstance(p, str) else p.name for p in self.peers]

    def peer_spec(self, name: str) -> Peer:
        """The peer a run names: a known one, the campaign's own url peer of that name, or a
        product running the file the campaign gives it."""
        for p in self.peers:
            if isinstance(p, UrlPeerEntry) and p.name == name:
                return UrlPeer(p)
            if isinstance(p, ConfigPeerEntry) and p.name == name:
                return p.peer
        return PEERS[name]

    def _peers_can_run(self) -> None:
        """Every peer is known and can express each entry's policy and route costs (whether it is
        installed, or a url peer answers, is the preflight's: harness/live/preflight.py)."""
        names = self.peer_names
        for peer, item in zip(names, self.peers):
            if isinstance(item, str) and peer not in PEERS:
                raise ValueError(f"peers: unknown peer {peer!r}; choose from: {', '.join(PEERS)}")
            if isinstance(item, UrlPeerEntry) and peer in PEERS:
                raise ValueError(f"peers: {peer!r} is a peer of the suite's; name the url peer otherwise")
            if names.count(peer) > 1:
                raise ValueError(f"peers: {peer} is listed more than once")
            spec = self.peer_spec(peer)
            for sc in self.scenarios:
                _judged_by_its_file(spec, sc, self.policy_for(sc))
                try:
                    spec.check(self.policy_for(sc), sorted(set(self.model_for(sc).arrivals().cost) - {1.0}))
                except PeerError as exc:
                    raise ValueError(f"{sc.where}: {exc}") from None

    def processes_for(self, scenario: LiveScenario) -> int:
        return scenario.processes or self.processes

    def stores_for(self, scenario: LiveScenario) -> list[str]:
        return list(scenario.stores or self.stores)

    def store_choice(self, store: str) -> StoreChoice:
        """A store entry or run's store as a choice, ``redis`` resolved to the campaign's mode."""
        return StoreChoice.parse(store).resolved(self.redis.mode)


def _judged_by_its_file(spec: Peer, scenario: LiveScenario, policy: Policy) -> None:
    """A peer running the user's file is judged by the file's own limit, and the scenario's runs
    share one policy (a panel draws one; analysis refuses a mix): the entry's policy must be the
    file's, else one line saying what to write."""
    own = spec.own_policy()
    if own is None or (own.limit, own.window_s, own.effective_burst) == (policy.limit, policy.window_s,
                                                                         policy.effective_burst):
        return
    assert isinstance(spec, ConfigPeer)
    raise ValueError(f"peers[{spec.name}].config: {spec.entry.config} enforces {_spelled(own)} ({spec.first.name}, "
                     f"line {spec.first.line}); {scenario.where} runs at {_spelled(policy)}: a scenario's runs are judged "
                     f"by one policy; set {'its' if scenario.policy else 'the campaign'} policy to the file's: "
                     f"{{limit: {own.limit:g}, window_s: {own.window_s:g}, burst: {own.effective_burst:g}}}")


def _spelled(p: Policy) -> str:
    return f"{p.limit:g} per {p.window_s:g} s, burst {p.effective_burst:g}"


def load_campaign(path: Path) -> Campaign:
    """The campaign file read and checked; its relative paths (a peer's ``config``) start from its folder."""
    return validate_model(Campaign, read_yaml(path), str(path), {"base": path.parent})
