"""Live campaign files (YAML, validated with pydantic): algorithms x stores x scenarios, the
policy, the scale, the downstream. Everything is checked before anything starts: one message
with the field's path, exit 2."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from scenarios import SCENARIOS, ScenarioError, build_model
from targets.algorithms import ALGORITHMS, Policy, PolicyError, build_params

from .sim_campaign import ConfigError, PolicyConfig

ParamValue = str | int | float


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LiveScenario(_Strict):
    name: str
    params: dict[str, ParamValue] = {}
    policy: PolicyConfig | None = None
    """Overrides the campaign's policy for this scenario (e.g. a strict per-second limit)."""
    algorithms: list[str] | None = None
    """Restricts the campaign's algorithms for this scenario."""
    target: dict[str, Any] = {}
    """Target config keys (targets.config.TargetConfig) merged over the runner's defaults, e.g.
    a key policy (``keys: {trusted_proxies: 1}``) or layered ``limits``; checked when the target
    starts (a bad value fails that run, named in its log)."""


class Scale(_Strict):
    workers: int = Field(default=1, ge=1, le=64)
    """Locust worker processes (Locust's master/worker mode when more than 1)."""
    lead_s: float = Field(default=2.5, gt=0)
    """Seconds between starting a run and the plan's t = 0 (Locust start-up, warm-up)."""
    drain_s: float = Field(default=1.5, ge=0)
    """Seconds after the last planned send for replies to arrive."""


class Downstream(_Strict):
    concurrency: int = Field(default=16, ge=1)
    median_ms: float = Field(default=10.0, ge=0)
    sigma: float = Field(default=0.5, ge=0)


class Campaign(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    description: str = ""
    seed: int = 1
    policy: PolicyConfig
    algorithms: list[str] = Field(min_length=1)
    stores: list[Literal["memory"]] = ["memory"]
    scenarios: list[LiveScenario] = Field(min_length=1)
    params: dict[str, dict[str, ParamValue]] = {}
    """Per-algorithm parameter overrides."""
    nodes: int = Field(default=1, ge=1)
    """Target nodes per run; more than one needs a shared store (the Redis store)."""
    scale: Scale = Scale()
    downstream: Downstream = Downstream()

    @field_validator("scenarios", mode="before")
    @classmethod
    def _names_alone(cls, value: object) -> object:
        if isinstance(value, list):
            return [{"name": v} if isinstance(v, str) else v for v in value]
        return value

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
                build_model(sc.name, policy.limit, policy.window_s, self.seed, {k: str(v) for k, v in sc.params.items()})
            except ScenarioError as exc:
                raise ValueError(f"{where}.params: {exc}") from None
            for a in self.algorithms_for(sc):
                if a not in ALGORITHMS:
                    raise ValueError(f"{where}.algorithms: unknown algorithm {a!r}")
                try:
                    self.params_for(a, policy)
                except PolicyError as exc:
                    raise ValueError(f"params.{a}: {exc}") from None
        return self

    def policy_for(self, scenario: LiveScenario) -> Policy:
        p = scenario.policy or self.policy
        return Policy(p.limit, p.window_s, p.burst)

    def algorithms_for(self, scenario: LiveScenario) -> list[str]:
        return scenario.algorithms or self.algorithms

    def params_for(self, algorithm: str, policy: Policy) -> Any:
        return build_params(algorithm, policy, {k: str(v) for k, v in self.params.get(algorithm, {}).items()})


def load_campaign(path: Path) -> Campaign:
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({exc})") from None
    try:
        return Campaign.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        msg = err["msg"].removeprefix("Value error, ")
        raise ConfigError(f"{path}: {where}: {msg}" if where != "(top level)" or ":" not in msg
                          else f"{path}: {msg}") from None
