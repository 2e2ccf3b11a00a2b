"""The policy file that `run_bench.py validate` gates: routes, keys, layered limits, store, nodes,
429 response, the traffic the service expects, and thresholds (YAML, validated with pydantic).

Every error names the field's path (``limits.1.burst: ...``) because the file is written by hand
and read by CI: one line has to say what to fix.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from contract.stores import RedisMode, StoreKind
from targets.algorithms import Policy, PolicyError, build_params
from targets.stores.redis import local_params

from .config_file import CampaignError, read_yaml, validate_model
from .thresholds import Threshold, parse_threshold

RateAlgorithm = Literal[
    "fixed_window", "sliding_log", "sliding_window_counter", "sliding_window_ring", "token_bucket", "leaky_bucket", "gcra",
]
"""Rate limits only: concurrency and adaptive limits bound work in progress, not a rate."""
PeerModel = Literal["limits_fixed_window", "limits_sliding_window_counter_redis", "haproxy_freq_ctr", "traefik_rate",
                    "envoy_local_ratelimit", "envoy_ratelimit_window", "kong_window", "caddy_ring", "fixed_block"]
"""The peer models (targets.algorithms.PEER_MODELS): a claim a url endpoint can make
(``validate --url``) and the simulation can judge; no suite target runs one (``--live`` without
``--url`` refuses them)."""
KeyKind = Literal["api_key", "user", "ip", "global"]
"""``global``: one counter for every client (a product's per-process limit: Envoy's local rate limit)."""
NAME = r"^[A-Za-z0-9_-]+$"


def _threshold(value: Any) -> Any:
    return parse_threshold(value) if isinstance(value, str) else value


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Route(_Strict):
    name: str = Field(min_length=1)
    """E.g. ``GET /api/items``."""
    cost: float = Field(default=1.0, gt=0)
    login: bool = False
    """A credential check: must be limited per IP and per account."""


class PolicyKeys(_Strict):
    behind_proxies: bool = False
    """Clients reach the service through load balancers / CDNs that add X-Forwarded-For."""
    trusted_proxies: int | None = Field(default=None, ge=0)
    """Hops to skip from the right of X-Forwarded-For; ``None`` = not configured."""
    ipv6: bool = True
    ipv6_prefix: int | None = Field(default=None, ge=1, le=128)
    """IPv6 clients are keyed by this prefix (64 is one customer's allocation); None or 128 = per address."""


class Limit(_Strict):
    name: str = Field(pattern=NAME)
    key: KeyKind
    routes: list[str] | None = None
    """Route names this limit covers; omitted = every route."""
    algorithm: RateAlgorithm | PeerModel
    limit: float = Field(gt=0)
    window_s: float = Field(gt=0)
    burst: float | None = Field(default=None, gt=0)
    params: dict[str, bool | int | float | str | None] = {}
    """Algorithm parameter overrides, as ``--param`` takes them."""
    protects: Literal["capacity", "quota"] = "capacity"
    """``capacity``: keeps load off the service, so over-admission matters; ``quota``: a billing or
    fairness allowance where a calendar-aligned window is the point."""

    def covers(self, route: str) -> bool:
        return self.routes is None or route in self.routes


class Store(_Strict):
    backend: StoreKind = "memory"
    mode: RedisMode | None = None
    """redis: shared (one Lua script per decision), local, leased, naive (INCR then EXPIRE);
    memory is always local. Defaults: memory -> local, redis -> shared."""
    divide_by_nodes: bool = True
    """Local mode: each node enforces limit / nodes."""
    on_failure: Literal["fail_open", "fail_closed"] = "fail_open"
    fallback: Literal["local_divided", "local", "none"] = "local_divided"
    """Fail-open only: what each node enforces while the store is down."""

    @property
    def effective_mode(self) -> RedisMode:
        return self.mode or ("local" if self.backend == "memory" else "shared")


class Response(_Strict):
    retry_after: bool = True
    cache_control: str | None = "no-store"
    """The 429's Cache-Control header; ``None`` = not sent."""


class Traffic(_Strict):
    page_route: str | None = None
    """The route a page load calls; defaults to the first route that is not a login."""
    page_load: int = Field(default=8, ge=1)
    """Requests a page fires in parallel."""
    peak_requests_per_min: float = Field(default=30.0, gt=0, le=6000)
    """One legitimate user's request rate at peak."""
    users: int = Field(default=20, ge=1, le=500)
    """Legitimate users simulated at that peak."""
    nat_clients: int = Field(default=10, ge=1, le=10_000)
    """Legitimate clients expected behind one NAT (or proxy) address."""
    abuse_factor: float = Field(default=5.0, gt=0)
    """The abusive client's rate as a multiple of the limit's rate."""
    attacker_addresses: int = Field(default=100, ge=1, le=100_000)
    """Addresses a credential-stuffing botnet (or an IPv6 /64) rotates through."""
    seed: int = Field(default=1, ge=0, le=2**63 - 1)


class Downstream(_Strict):
    """The service behind the limits, for validate's latency checks (docs/validate.md): its
    slots and service time (as a live target's downstream), the offered rate it must take at
    peak, and the P99 bound at that rate."""

    concurrency: int = Field(ge=1, le=100_000)
    median_ms: float = Field(ge=0, le=60_000)
    sigma: float = Field(default=0.5, ge=0, le=5)
    peak_rps: float = Field(gt=0, le=200_000)
    """All clients together, at peak."""
    p99_bound_ms: float = Field(default=100.0, gt=0)


class PolicyFile(_Strict):
    name: str = Field(pattern=NAME)
    description: str = ""
    routes: list[Route] = Field(min_length=1)
    keys: PolicyKeys = PolicyKeys()
    limits: list[Limit] = Field(min_length=1)
    store: Store = Store()
    nodes: int = Field(default=1, ge=1, le=1000)
    response: Response = Response()
    traffic: Traffic = Traffic()
    thresholds: list[Annotated[Threshold, BeforeValidator(_threshold)]] = []
    """k6-style strings, parsed one by one so that an error names its index."""
    downstream: Downstream | None = None
    """Declared: the verdict adds P99 at the peak and the highest rate P99 stays under its bound."""

    def route(self, name: str) -> Route:
        return next(r for r in self.routes if r.name == name)

    @property
    def local_divisor(self) -> int:
        """What each node's share of a limit is divided by: N for node-local counters split
        over N nodes, else 1."""
        return self.nodes if self.store.effective_mode == "local" and self.store.divide_by_nodes else 1

    @property
    def page_route(self) -> Route:
        name = self.traffic.page_route or next((r.name for r in self.routes if not r.login), self.routes[0].name)
        return self.route(name)


def params_of(limit: Limit, divisor: int = 1) -> Any:
    """A limit's algorithm parameters, optionally one node's share of ``divisor``: divided after
    the file's parameter overrides, as the target's local store divides them (``local_params``)."""
    params = build_params(limit.algorithm, Policy(limit.limit, limit.window_s, limit.burst),
                          limit.params)
    return params if divisor == 1 else local_params(params, divisor)


def _cross_check(p: PolicyFile) -> None:
    """What pydantic cannot see field by field; raises CampaignError-ready (path, message)."""
    route_names = [r.name for r in p.routes]
    for i, r in enumerate(p.routes):
        if r.name in route_names[:i]:
            raise _Bad(f"routes[{r.name}].name", f"duplicate route {r.name!r}")
    limit_names = [lim.name for lim in p.limits]
    for i, lim in enumerate(p.limits):
        if lim.name in limit_names[:i]:
            raise _Bad(f"limits[{lim.name}].name", f"duplicate limit {lim.name!r}")
        for route in lim.routes or []:
            if route not in route_names:
                raise _Bad(f"limits[{lim.name}].routes[{route}]", f"unknown route {route!r}; routes: {', '.join(route_names)}")
        try:
            params_of(lim)
        except PolicyError as exc:
            raise _Bad(f"limits[{lim.name}].params", str(exc)) from None
    if p.traffic.page_route is not None and p.traffic.page_route not in route_names:
        raise _Bad("traffic.page_route", f"unknown route {p.traffic.page_route!r}; routes: {', '.join(route_names)}")
    if p.store.backend == "memory" and p.store.effective_mode != "local":
        raise _Bad("store.mode", "a memory store lives in one process: only 'local' applies (use backend: redis)")
    for t in p.thresholds:
        if t.limit is not None and t.limit not in limit_names:
            raise _Bad(f"thresholds[{t}]", f"unknown limit {t.limit!r}; limits: {', '.join(limit_names)}")


class _Bad(Exception):
    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}")


def parse_policy(raw: Any, source: str) -> PolicyFile:
    policy = validate_model(PolicyFile, raw, source)
    try:
        _cross_check(policy)
    except _Bad as exc:
        raise CampaignError(f"{source}: {exc}") from None
    return policy


def load_policy(path: Path) -> PolicyFile:
    return parse_policy(read_yaml(path), str(path))
