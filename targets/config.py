"""A target's configuration: one pydantic model (unknown fields rejected), loaded from YAML/JSON
and/or the command line, then checked against the algorithm registry.

Every error becomes one ``ConfigError`` whose message starts with the field's dotted path, so
``python -m targets`` can print it, exit 2 and open no port.
"""

from __future__ import annotations

import difflib
import itertools
import math
import os
import time
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from contract.errors import BadInput
from contract.paths import read_input, yaml_problem
from contract.routes import CATALOGUE, ROUTE_PATHS
from contract.stores import RedisMode, StoreKind

from .algorithms import PolicyError, build_params, get_algorithm
from .algorithms.policy import Policy

Scope = Literal["client", "ip", "user", "api_key", "tenant", "account", "global"]
"""Which identity a limit counts by. ``client`` is API key > authenticated user > client IP."""
AdmittedHeaders = Literal["full", "draft", "none"]
RepeatedKey = Literal["refuse", "first"]
OverrideHealth = Literal["healthy", "degraded", "recovered", "outage"]
"""What ``/_bench/health`` can switch to at run time (a phase with no parameters but a factor)."""
Health = Literal["healthy", "degraded", "recovered", "outage", "stuck", "paused"]
"""Downstream phases: ``degraded`` multiplies the service time by its factor; during an
``outage`` every admitted request is answered 503 at once; ``stuck`` holds every call exactly
``latency_ms``; ``paused`` stops the world for ``pause_ms`` every ``period_s``
(``targets/downstream_phases.py``)."""
Name = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")]
PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegativeFloat = Annotated[float, Field(ge=0, allow_inf_nan=False)]
MAX_FACTOR = 1000.0
Factor = Annotated[float, Field(ge=1, le=MAX_FACTOR, allow_inf_nan=False)]
"""A degraded phase's service-time multiplier: bounded, so no phase holds a slot for ever."""
ParamValue = bool | int | float | str | None

DEFAULT_COSTS = {r.name: r.cost for r in CATALOGUE}
API_ROUTES = tuple(r.name for r in CATALOGUE if r.api)


class ConfigError(BadInput):
    """Bad target configuration; the message names the field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TierPolicy(_Strict):
    """A tier's own policy for one limit (fields left out keep the limit's values)."""

    limit: PositiveFloat | None = None
    window_s: PositiveFloat | None = None
    burst: PositiveFloat | None = None


class LimitConfig(_Strict):
    """One layer of limits. Layers are checked in list order: put the narrowest first."""

    name: Name
    scope: Scope = "client"
    routes: list[str] | None = None
    """Route names this layer applies to; default: the API routes (items, search, reports)."""
    algorithm: str | None = None
    """Default: the target's algorithm."""
    limit: PositiveFloat | None = None
    window_s: PositiveFloat | None = None
    burst: PositiveFloat | None = None
    params: dict[str, ParamValue] = {}
    tiers: dict[Name, TierPolicy] = {}

    @field_validator("routes")
    @classmethod
    def _known_routes(cls, routes: list[str] | None) -> list[str] | None:
        for route in routes or ():
            if route not in ROUTE_PATHS:
                raise ValueError(f"unknown route {route!r}; choose from: {', '.join(ROUTE_PATHS)}")
        return routes


class RouteConfig(_Strict):
    cost: PositiveFloat


class ServiceTime(_Strict):
    """Lognormal service time: ``median_ms`` scaled by exp(N(0, sigma)); 0 = no wait."""

    median_ms: NonNegativeFloat = 20.0
    sigma: NonNegativeFloat = 0.5


class Phase(_Strict):
    at_s: NonNegativeFloat
    """Seconds after the shared start time when this phase begins."""
    health: Health
    factor: Factor = 1.0
    """Service-time multiplier while degraded."""
    latency_ms: Annotated[float, Field(ge=0, le=MAX_FACTOR * 1000, allow_inf_nan=False)] = 1000.0
    """``stuck``: what every call takes (a timeout-level latency)."""
    period_s: PositiveFloat = 1.0
    """``paused``: a pause starts every this many seconds from the phase's start."""
    pause_ms: NonNegativeFloat = 100.0
    """``paused``: how long each pause stops the world."""

    @model_validator(mode="after")
    def _pause_shorter_than_period(self) -> Phase:
        if self.health == "paused" and self.pause_ms / 1000.0 >= self.period_s:
            raise ValueError(f"pause_ms ({self.pause_ms}) must be shorter than period_s ({self.period_s}) x 1000")
        return self


def parse_schedule(text: str) -> list[dict[str, Any]]:
    """``"0:healthy,30:degraded:5,60:recovered,90:outage,95:recovered"`` -> phases (the CLI's
    compact form)."""
    phases = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        at, _, rest = item.partition(":")
        health, _, factor = rest.partition(":")
        try:
            phases.append({"at_s": float(at), "health": health, **({"factor": float(factor)} if factor else {})})
        except ValueError:
            raise ValueError(f"cannot parse phase {item!r}; expected AT_S:HEALTH[:FACTOR]") from None
    return phases


class DownstreamConfig(_Strict):
    concurrency: Annotated[int, Field(ge=1)] = 32
    service_time: ServiceTime = ServiceTime()
    schedule: list[Phase] = []
    start_at: NonNegativeFloat | None = None
    """Epoch seconds the schedule counts from, shared by every node; default: process start."""
    seed: int | None = None

    @field_validator("schedule", mode="before")
    @classmethod
    def _compact_schedule(cls, value: Any) -> Any:
        return parse_schedule(value) if isinstance(value, str) else value

    @field_validator("schedule")
    @classmethod
    def _ordered(cls, phases: list[Phase]) -> list[Phase]:
        if any(b.at_s <= a.at_s for a, b in itertools.pairwise(phases)):
            raise ValueError("phases must have strictly increasing at_s")
        return phases


class KeyConfig(_Strict):
    api_key_header: str = "x-api-key"
    user_header: str = "x-user"
    """Set by the (simulated) authentication layer in front of the target."""
    tenant_header: str = "x-tenant"
    tier_header: str = "x-tier"
    trusted_proxies: Annotated[int, Field(ge=0, le=16)] = 0
    """Proxies in front of the target that append to X-Forwarded-For (0: use the peer)."""
    ipv4_prefix: Annotated[int, Field(ge=1, le=32)] = 32
    ipv6_prefix: Annotated[int, Field(ge=1, le=128)] = 64
    repeated_key: RepeatedKey = "refuse"
    """An identity header sent more than once: ``refuse`` (400, no decision) or ``first`` (its
    first value counts). Never the values joined: a client would name a fresh key per request."""

    @field_validator("api_key_header", "user_header", "tenant_header", "tier_header")
    @classmethod
    def _lower_token(cls, name: str) -> str:
        if not name or not all(c.isalnum() or c in "-_" for c in name):
            raise ValueError(f"not a header name: {name!r}")
        return name.lower()


class FallbackPolicy(_Strict):
    """The local limit a node applies while Redis is unavailable (fail-open)."""

    limit: PositiveFloat
    window_s: PositiveFloat | None = None
    """Default: the layer's window."""
    burst: PositiveFloat | None = None


class StoreConfig(_Strict):
    name: StoreKind = "memory"
    max_keys: Annotated[int, Field(ge=1)] = 100_000
    idle_ttl_s: NonNegativeFloat | None = None
    """Default: each algorithm's own state lifetime (expiry never changes a decision)."""
    # -- redis only (docs/redis.md) --
    url: str | None = None
    """Default: the REDIS_URL environment variable."""
    mode: RedisMode = "shared"
    cluster: bool = False
    namespace: Name = "rl"
    """Key prefix; each layer and tier adds its own name below it."""
    nodes: Annotated[int, Field(ge=1)] = 1
    """Target nodes sharing the limit: ``split`` and the default fallback give each L/N."""
    split: bool = False
    """``local`` mode: each node enforces L/N instead of L."""
    batch: Annotated[int, Field(ge=1)] = 100
    lease_ttl_s: PositiveFloat = 1.0
    timeout_s: PositiveFloat = 0.05
    retry_s: PositiveFloat = 1.0
    """Probe interval during an outage (and Retry-After when failing closed)."""
    fail_open: bool = True
    fallback: FallbackPolicy | None = None
    """Fail-open limit; default: the shared limit split over ``nodes``."""

    @model_validator(mode="before")
    @classmethod
    def _url_from_env(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("name") == "redis" and not data.get("url"):
            data = {**data, "url": os.environ.get("REDIS_URL") or None}
        return data

    @model_validator(mode="after")
    def _redis_needs_url(self) -> StoreConfig:
        if self.name == "redis" and self.mode != "local" and not self.url:
            raise ValueError("url: the redis store needs a URL (store.url, --redis-url or REDIS_URL)")
        return self


class DecisionLogConfig(_Strict):
    path: Path | None = None
    """Parquet file written on shutdown (row groups while running); None: no log."""
    flush_every_s: PositiveFloat = 1.0


class TargetConfig(_Strict):
    algorithm: str = "token_bucket"
    limit: PositiveFloat = 100.0
    window_s: PositiveFloat = 60.0
    burst: PositiveFloat | None = None
    params: dict[str, ParamValue] = {}
    store: StoreConfig = StoreConfig()
    keys: KeyConfig = KeyConfig()
    limits: list[LimitConfig] | None = None
    """Default: ``per-client`` on the API routes, ``login-ip`` and ``login-account`` on login,
    all with the target's algorithm and policy (``adaptive``: one ``global`` layer)."""
    routes: dict[str, RouteConfig] = {}
    """Cost overrides by route name; defaults: items 1, search 2, reports 20, login 1."""
    downstream: DownstreamConfig = DownstreamConfig()
    decision_log: DecisionLogConfig = DecisionLogConfig()
    node: Name = "node-1"
    admin_port: Annotated[int, Field(ge=1, le=65535)] | None = None
    """The loopback port of the admin listener (``/_bench/*``); None: no admin endpoints."""
    processes: Annotated[int, Field(ge=1, le=64)] = 1
    """Server processes of this node, all on its one port (targets/multiprocess.py): on the
    memory store (and Redis ``local`` mode) each keeps its own counts, so the node admits up to
    processes x L; on a shared Redis mode they share one limit."""
    admitted_headers: AdmittedHeaders = "full"
    """Quota headers on admitted responses (a 429 always carries all of them): ``full`` (the
    draft's RateLimit-Policy and RateLimit, and the legacy X-RateLimit-* trio), ``draft`` (the
    draft's two only) or ``none``. Each header costs every admitted response (see docs/targets.md)."""

    @field_validator("algorithm")
    @classmethod
    def _known_algorithm(cls, name: str) -> str:
        get_algorithm(name)
        return name

    @field_validator("routes")
    @classmethod
    def _known_route_names(cls, routes: dict[str, RouteConfig]) -> dict[str, RouteConfig]:
        for name in routes:
            if name not in ROUTE_PATHS:
                raise ValueError(f"unknown route {name!r}; choose from: {', '.join(ROUTE_PATHS)}")
        return routes

    @model_validator(mode="after")
    def _unique_limit_names(self) -> TargetConfig:
        names = [lim.name for lim in self.limits or ()]
        if len(names) != len(set(names)):
            raise ValueError("limits: names must be unique")
        return self

    def cost(self, route: str) -> float:
        override = self.routes.get(route)
        return DEFAULT_COSTS[route] if override is None else override.cost

    def layers(self) -> list[LimitConfig]:
        """The configured limits, or the defaults described on ``limits``."""
        if self.limits is not None:
            return self.limits
        if get_algorithm(self.algorithm).scope == "global":
            return [LimitConfig(name="adaptive", scope="global", routes=list(ROUTE_PATHS))]
        return [
            LimitConfig(name="per-client", scope="client", routes=list(API_ROUTES)),
            LimitConfig(name="login-ip", scope="ip", routes=["login"]),
            LimitConfig(name="login-account", scope="account", routes=["login"]),
        ]

    def schedule_start(self) -> float:
        return time.time() if self.downstream.start_at is None else self.downstream.start_at


def resolve_params(config: TargetConfig, layer: LimitConfig, tier: TierPolicy | None = None) -> tuple[str, Policy, Any]:
    """(algorithm, policy, the algorithm's params) for one layer and tier; PolicyError on bad values."""
    algorithm = layer.algorithm or config.algorithm
    get_algorithm(algorithm)
    policy = Policy(
        _first(tier and tier.limit, layer.limit, config.limit),
        _first(tier and tier.window_s, layer.window_s, config.window_s),
        _first(tier and tier.burst, layer.burst, config.burst),
    )
    overrides = {**(config.params if layer.algorithm in (None, config.algorithm) else {}), **layer.params}
    return algorithm, policy, build_params(algorithm, policy, overrides)


def _first(*values: float | None) -> float | None:
    return next((v for v in values if v is not None), None)


def check(config: TargetConfig) -> list[str]:
    """Everything pydantic cannot see: algorithm parameters, the quota headers each layer can
    tell truthfully, and route costs against each layer. A cost the user set that a layer can
    never admit is an error; a default cost (reports: 20) is not the user's doing and must not
    stop a target from starting: it comes back as a warning, and such a request gets a 429
    that says waiting will not help (``validate`` still lints it)."""
    from .headers import advertised_quota

    warnings = []
    for i, layer in enumerate(config.layers()):
        field = f"limits.{i}" if config.limits is not None else "params"
        for tier_name, tier in [(None, None), *layer.tiers.items()]:
            where = field if tier_name is None else f"{field}.tiers.{tier_name}"
            try:
                algorithm, policy, params = resolve_params(config, layer, tier)
            except PolicyError as exc:
                raise ConfigError(f"{where}: {exc}") from None
            try:
                advertised_quota(get_algorithm(algorithm), policy, params)
            except PolicyError as exc:
                quota_field = "limit" if config.limits is None and tier_name is None else f"{where}.limit"
                raise ConfigError(f"{quota_field}: {exc}") from None
            if config.store.name == "redis" and config.store.mode == "naive" and algorithm not in ("fixed_window", "none"):
                raise ConfigError(f"store.mode: naive is a fixed window (INCR then EXPIRE); {layer.name} uses {algorithm}")
            most = get_algorithm(algorithm).max_cost(params)
            name = layer.name if tier_name is None else f"{layer.name} (tier {tier_name})"
            for route in layer.routes or API_ROUTES:
                cost = config.cost(route)
                if cost <= most or math.isinf(most):
                    continue
                if route in config.routes:
                    raise ConfigError(f"routes.{route}.cost: {cost:g} can never be admitted by {name} (at most {most:g} per request)")
                method, path = ROUTE_PATHS[route]
                warnings.append(f"routes.{route}.cost: the default cost {cost:g} can never be admitted by {name} (at most "
                                f"{most:g} per request): {method} {path} will answer 429; set routes.{route}.cost "
                                f"(--cost {route}=N) or a larger limit to serve it")
    return warnings


def load(path: Path | None, overrides: dict[str, Any], warn: list[str] | None = None) -> TargetConfig:
    """The config file (YAML or JSON) with command-line values on top, validated and checked;
    ``check``'s warnings are appended to ``warn`` when given."""
    data: dict[str, Any] = {}
    if path is not None:
        text = read_input(path, "--config")
        try:
            loaded = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ConfigError(f"--config {path}: not valid YAML ({yaml_problem(exc)})") from None
        if not isinstance(loaded, dict):
            raise ConfigError(f"--config {path}: expected a mapping at the top level")
        data = loaded
    data = deep_merge(data, overrides)
    try:
        config = TargetConfig.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()  # an unknown field first: a typo's missing twin would hide it
        err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
        field = ".".join(str(p) for p in err["loc"]) or "config"
        raise ConfigError(f"{field}: {_message(err)}") from None
    warnings = check(config)
    if warn is not None:
        warn.extend(warnings)
    return config


def _message(err: Any) -> str:
    if err.get("type") == "extra_forbidden":
        valid = _valid_names(err["loc"][:-1])
        near = difflib.get_close_matches(str(err["loc"][-1]), valid, n=1)
        return "unknown field" + (f" (did you mean {near[0]!r}?)" if near else "") + (
            f"; valid: {', '.join(valid)}" if valid else "")
    text = str(err.get("msg", "invalid"))
    return text.removeprefix("Value error, ")


def _valid_names(loc: tuple[Any, ...]) -> list[str]:
    """The fields of the model at ``loc`` in TargetConfig (empty where the path leaves the models)."""
    model: Any = TargetConfig
    for part in loc:
        field = model.model_fields.get(part) if isinstance(part, str) and hasattr(model, "model_fields") else None
        if field is None:
            return []
        model = field.annotation
    return list(model.model_fields) if hasattr(model, "model_fields") else []


def deep_merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """``top`` over ``base``, mappings merged key by key."""
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out
