"""Live campaign files (YAML, validated with pydantic): algorithms x stores x scenarios, the
policy, the scale, the downstream. Everything is checked before anything starts: one message
with the field's path, exit 2."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from scenarios import SCENARIOS, ScenarioError, TrafficModel, build_model
from scenarios.fleet import fleet_of
from targets.algorithms import ALGORITHMS, Policy, PolicyError, build_params

from .config_file import CampaignHeader, PolicyConfig, read_yaml, str_params, validate_model

ParamValue = str | int | float
StoreName = Literal["memory", "redis", "redis-shared", "redis-local", "redis-local-split", "redis-leased", "redis-naive"]
"""``memory``, or the redis store in a mode: ``redis`` is the campaign's ``redis.mode``;
``redis-local-split`` is local mode with L/N per node."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LiveScenario(_Strict):
    name: str
    params: dict[str, ParamValue] = {}
    policy: PolicyConfig | None = None
    """Overrides the campaign's policy for this scenario (e.g. a strict per-second limit)."""
    algorithms: list[str] | None = None
    """Restricts the campaign's algorithms for this scenario."""
    stores: list[StoreName] | None = None
    """Replaces the campaign's stores for this scenario (e.g. the modes of multi_node)."""
    label: str | None = Field(default=None, pattern=r"^[A-Za-z0-9.-]+(_[A-Za-z0-9.-]+)*$")
    """Tells apart entries of one scenario (e.g. one per backoff policy): runs are named
    ``<name>-<label>`` (folders, run.json, summary)."""
    target: dict[str, Any] = {}
    """Target config keys (targets.config.TargetConfig) merged over the runner's defaults, e.g.
    a key policy (``keys: {trusted_proxies: 1}``) or layered ``limits``; checked when the target
    starts (a bad value fails that run, named in its log)."""

    @property
    def run_name(self) -> str:
        return f"{self.name}-{self.label}" if self.label else self.name


class Scale(_Strict):
    workers: int = Field(default=1, ge=1, le=64)
    """Locust worker processes (Locust's master/worker mode when more than 1)."""
    lead_s: float = Field(default=2.5, gt=0)
    """Seconds between starting a run and the plan's t = 0 (Locust start-up, warm-up)."""
    drain_s: float = Field(default=1.5, ge=0)
    """Seconds after the last planned send for replies to arrive."""


class DownstreamSettings(_Strict):
    concurrency: int = Field(default=16, ge=1)
    median_ms: float = Field(default=10.0, ge=0)
    sigma: float = Field(default=0.5, ge=0)


class RedisOptions(_Strict):
    """How runs on the redis store use it (docs/redis.md); the server is the runner's own
    redis-server unless ``url`` or REDIS_URL names one."""

    url: str | None = None
    mode: Literal["shared", "local", "leased", "naive"] = "shared"
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
    params: dict[str, dict[str, ParamValue]] = Field(default_factory=dict)
    """Per-algorithm parameter overrides."""
    nodes: int = Field(default=1, ge=1)
    """Target nodes per run; more than one needs a shared store (the Redis store). A scenario
    with its own fleet (multi_node) sets its own."""
    routing: Literal["round_robin", "sticky"] = "round_robin"
    """How requests are dealt over the nodes (sticky: by a hash of the client id)."""
    scale: Scale = Scale()
    downstream: DownstreamSettings = DownstreamSettings()

    @field_validator("algorithms")
    @classmethod
    def _known_algorithms(cls, value: list[str]) -> list[str]:
        if value == ["all"]:
            return list(ALGORITHMS)
        unknown = [a for a in value if a not in ALGORITHMS]
        if unknown:
            raise ValueError(f"unknown algorithm {unknown[0]!r}; choose from: all, {', '.join(ALGORITHMS)}")
        return value

    @model_validator(mode="after")
    def _runs_are_buildable(self) -> Campaign:
        """Every scenario model and algorithm's parameters build (bad values fail here)."""
        if self.nodes > 1 and set(self.stores) == {"memory"}:
            raise ValueError("nodes: more than one node needs a shared store; the memory store is per process")
        for i, sc in enumerate(self.scenarios):
            where = f"scenarios.{i}"
            if sc.name not in SCENARIOS:
                raise ValueError(f"{where}.name: unknown scenario {sc.name!r}; choose from: {', '.join(SCENARIOS)}")
            policy = self.policy_for(sc)
            try:
                model = self.model_for(sc)
            except ScenarioError as exc:
                raise ValueError(f"{where}.params: {exc}") from None
            fleet = fleet_of(model)
            if fleet is not None and fleet.nodes > 1 and "memory" in self.stores_for(sc):
                raise ValueError(f"{where}.stores: {sc.name} runs {fleet.nodes} nodes; the memory store is per process "
                                 "(use redis-local for independent nodes)")
            if hasattr(model, "outage") and any(self.redis_mode(st) in (None, "local") for st in self.stores_for(sc)):
                raise ValueError(f"{where}.stores: {sc.name} stops Redis mid-run; it needs redis-shared, redis-leased or redis-naive")
            for a in self.algorithms_for(sc):
                if a not in ALGORITHMS:
                    raise ValueError(f"{where}.algorithms: unknown algorithm {a!r}")
                try:
                    self.params_for(a, policy)
                except PolicyError as exc:
                    raise ValueError(f"params.{a}: {exc}") from None
        seen: set[tuple[str, str]] = set()
        for i, sc in enumerate(self.scenarios):
            for a in self.algorithms_for(sc):
                if (sc.run_name, a) in seen:
                    raise ValueError(f"scenarios.{i}.label: a second {sc.run_name} x {a} run would overwrite the first; "
                                     "give each entry of a scenario its own label")
                seen.add((sc.run_name, a))
        return self

    def policy_for(self, scenario: LiveScenario) -> Policy:
        p = scenario.policy or self.policy
        return Policy(p.limit, p.window_s, p.burst)

    def model_for(self, scenario: LiveScenario) -> TrafficModel:
        """The scenario's traffic model at its policy and the campaign's seed (ScenarioError on bad params)."""
        policy = self.policy_for(scenario)
        return build_model(scenario.name, policy.limit, policy.window_s, self.seed, str_params(scenario.params))

    def stores_for(self, scenario: LiveScenario) -> list[str]:
        return list(scenario.stores or self.stores)

    def redis_mode(self, store: str) -> str | None:
        """The redis mode of a store entry (``local`` for both local ones); None for memory."""
        if store == "memory":
            return None
        mode = store.removeprefix("redis").removeprefix("-") or self.redis.mode
        return "local" if mode == "local-split" else mode

    def store_label(self, store: str) -> str:
        """The store as run folders and run.json name it: ``redis`` resolved to its mode."""
        return f"redis-{self.redis.mode}" if store == "redis" else store

    def algorithms_for(self, scenario: LiveScenario) -> list[str]:
        return scenario.algorithms or self.algorithms

    def params_for(self, algorithm: str, policy: Policy) -> Any:
        return build_params(algorithm, policy, str_params(self.params.get(algorithm, {})))


def load_campaign(path: Path) -> Campaign:
    return validate_model(Campaign, read_yaml(path), str(path))
