"""Layered limits: which limits apply to a route, and the all-or-nothing check across them.

A route has a list of layers, narrowest first (e.g. per-user, then the tenant's quota). Every
layer is asked; the first that rejects decides and nothing is consumed anywhere (layers are
peeked, then committed only when all admit). One layer (the common case) takes the store's
single ``decide`` call. A layer whose scope is absent from the request (no tenant header, say)
does not apply. Tiers (free, VIP...) select a layer's own policy and store by the tier header.

Layers on Redis (``remote``) are awaited (``check_remote``): Redis has no peek, so they decide
and spend in turn, and a request rejected by a later layer has spent quota in the earlier
Redis layers (concurrency slots excepted: those are released). Memory layers keep the
synchronous path: no await, nothing added.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

from targets.stores.memory import MemoryStore
from targets.stores.redis import decision_source

from .algorithms import Algorithm, Decision, get_algorithm
from .config import API_ROUTES, ROUTE_PATHS, LimitConfig, TargetConfig, resolve_params
from .headers import QuotaText, advertised_quota
from .keys import Identity
from .layer_store import open_layer_store
from .stores.protocol import SharedStore


@dataclass
class Variant:
    """A layer's policy for one tier: its own store, quota and header item."""

    store: MemoryStore | SharedStore
    """A MemoryStore, or (``remote``) an async Redis store."""
    text: QuotaText
    remote: bool = False
    source: str | None = "memory"
    """The decision log's ``source`` for a local store; None: each decision says its own."""
    max_cost: float = math.inf
    """The largest cost one request can ever be admitted with (a 429 beyond it says so)."""

    def source_of(self, decision: Decision) -> str:
        return self.source or decision_source(decision)


def moving_limit(algorithm: Algorithm, state: Any, params: Any) -> float:
    """The limit a latency-driven algorithm's state stands at (its ``current_limit`` hook); NaN
    for an algorithm whose limit does not move."""
    return math.nan if algorithm.current_limit is None else algorithm.current_limit(state, params)


@dataclass
class Layer:
    name: str
    scope: str
    algorithm: Algorithm
    variants: dict[str | None, Variant]
    """By tier name; None is the default policy."""
    holds: bool = False
    """Concurrency-style: the slot is held until the response completes (release)."""
    observes: bool = False
    """Latency-driven (adaptive): each completed request's latency is fed back."""
    current_limit: float = math.nan
    """Adaptive only: the limit after the last decision or sample (for headers and metrics)."""
    remote: bool = False
    """Its stores are on Redis (every tier alike)."""

    def variant(self, tier: str | None) -> Variant:
        return self.variants.get(tier) or self.variants[None]

    def refresh_limit(self, store: MemoryStore, key: str) -> None:
        state = store.state(key)
        if state is not None:
            self.current_limit = moving_limit(self.algorithm, state, store.params)


@dataclass(slots=True)
class Applied:
    layer: Layer
    key: str
    variant: Variant
    decision: Decision
    decision_us: float


@dataclass(slots=True)
class Verdict:
    allowed: bool
    applied: list[Applied] = field(default_factory=list)
    """Admitted: every layer that applied; rejected: only the layer that rejected."""


UNROUTED = ("*", "*")
"""The plan of a request no route serves (any method or path but ``NEVER_LIMITED``): cost 1, the
limits that apply to every route; a HEAD of a GET route is that route's."""
UNROUTED_NAME = "unrouted"
NEVER_LIMITED = frozenset({"/healthz"})


@dataclass
class RoutePlan:
    name: str
    cost: float
    layers: list[Layer]
    needs_account: bool
    remote: bool = False
    """Some layer is on Redis: the middleware awaits ``check_remote``."""
    holds: bool = False
    """Some layer holds a slot until the response completes (or samples its latency)."""
    local: RoutePlan | None = None
    """``remote`` plans: the plan of their memory layers (checked after the Redis ones), if any."""


def build_layers(config: TargetConfig) -> tuple[list[Layer], dict[tuple[str, str], RoutePlan]]:
    """Every layer with its stores, and the plan for each limited (method, path)."""
    layers: list[tuple[LimitConfig, Layer]] = []
    for lc in config.layers():
        variants = {}
        for tier_name, tier in [(None, None), *lc.tiers.items()]:
            name, policy, params = resolve_params(config, lc, tier)
            algorithm = get_algorithm(name)
            opened = open_layer_store(config.store, lc.name, tier_name, algorithm, policy, params)
            text = QuotaText.of(lc.name, *advertised_quota(algorithm, policy, params))
            variants[tier_name] = Variant(opened.store, text, opened.remote, opened.source, algorithm.max_cost(params))
        algorithm = get_algorithm(resolve_params(config, lc)[0])
        layer = Layer(lc.name, lc.scope, algorithm, variants, holds=algorithm.release is not None,
                      observes=algorithm.observe is not None, remote=variants[None].remote)
        if layer.observes:
            layer.current_limit = moving_limit(algorithm, None, variants[None].store.params)
        layers.append((lc, layer))
    routes = {}
    for route, method_path in ROUTE_PATHS.items():
        chosen = [layer for lc, layer in layers if route in (lc.routes or API_ROUTES)]
        routes[method_path] = _plan(route, config.cost(route), chosen)
    # NGINX's `location /` counts every request: a HEAD, a 404 or a 405 costs the target too
    every = [layer for lc, layer in layers if set(API_ROUTES) <= set(lc.routes or API_ROUTES)]
    routes[UNROUTED] = _plan(UNROUTED_NAME, 1.0, every)
    return [layer for _, layer in layers], routes


def _plan(route: str, cost: float, chosen: list[Layer]) -> RoutePlan:
    plan = RoutePlan(route, cost, chosen, any(la.scope == "account" for la in chosen),
                     any(la.remote for la in chosen), any(la.holds or la.observes for la in chosen))
    local = [la for la in chosen if not la.remote]
    if plan.remote and local:
        plan.local = RoutePlan(route, plan.cost, local, plan.needs_account)
    return plan


def remote_stores(layers: list[Layer]) -> list[tuple[str, SharedStore]]:
    """(layer name, store) of every Redis store, for metrics and shutdown."""
    return [(layer.name, v.store) for layer in layers for v in layer.variants.values() if v.remote]


def check(plan: RoutePlan, who: Identity, now: float) -> Verdict:
    """Ask every applicable layer, narrowest first; commit only if all admit."""
    cost, clock = plan.cost, time.perf_counter_ns
    layers = plan.layers
    if len(layers) == 1:
        layer = layers[0]
        key = who.key(layer.scope)
        if key is None:
            return Verdict(True)
        variant = layer.variant(who.tier)
        start = clock()
        decision = variant.store.decide(key, now, cost)
        micros = (clock() - start) / 1000.0
        if layer.observes:
            layer.refresh_limit(variant.store, key)
        return Verdict(decision[0], [Applied(layer, key, variant, decision, micros)])
    pending: list[tuple[Applied, Any]] = []
    for layer in layers:
        key = who.key(layer.scope)
        if key is None:
            continue
        variant = layer.variant(who.tier)
        start = clock()
        decision, state = variant.store.peek(key, now, cost)
        applied = Applied(layer, key, variant, decision, (clock() - start) / 1000.0)
        if not decision[0]:
            return Verdict(False, [applied])
        pending.append((applied, state))
    for applied, state in pending:
        applied.variant.store.commit(applied.key, now, state)
        if applied.layer.observes:
            applied.layer.refresh_limit(applied.variant.store, applied.key)
    return Verdict(True, [a for a, _ in pending])


async def check_remote(plan: RoutePlan, who: Identity) -> Verdict:
    """The layered check when some layer is on Redis: Redis layers decide (and spend) in turn,
    then the memory layers are checked synchronously, so their peek + commit stays atomic."""
    cost, clock = plan.cost, time.perf_counter_ns
    spent: list[Applied] = []
    for layer in plan.layers:
        if not layer.remote:
            continue
        key = who.key(layer.scope)
        if key is None:
            continue
        variant = layer.variant(who.tier)
        start = clock()
        decision = await variant.store.decide(key, None, cost)
        applied = Applied(layer, key, variant, decision, (clock() - start) / 1000.0)
        if not decision[0]:
            await _give_back(spent, cost)
            return Verdict(False, [applied])
        spent.append(applied)
    if plan.local is None:
        return Verdict(True, spent)
    verdict = check(plan.local, who, time.time())
    if not verdict.allowed:
        await _give_back(spent, cost)
        return verdict
    return Verdict(True, spent + verdict.applied)


async def _give_back(spent: list[Applied], cost: float) -> None:
    """A later layer rejected: the Redis layers that admitted keep their spent quota (no peek in
    Redis), but the slots of concurrency layers are released, or they would stay taken (their
    keys have no TTL)."""
    for a in spent:
        if a.layer.holds:
            await a.variant.store.release(a.key, None, cost)


async def complete_remote(verdict: Verdict, cost: float, rtt_s: float, failed: bool = False) -> None:
    """``complete`` for a verdict with Redis layers: their slots are given back in Redis."""
    complete(Verdict(True, [a for a in verdict.applied if not a.layer.remote]), cost, rtt_s, failed)
    for a in verdict.applied:
        if a.layer.remote and a.layer.holds:
            await a.variant.store.release(a.key, None, cost)


def complete(verdict: Verdict, cost: float, rtt_s: float, failed: bool = False) -> None:
    """After an admitted request finished: latency samples (``failed``: it answered 503), then
    slots given back."""
    now = time.time()
    for a in verdict.applied:
        if a.layer.holds or a.layer.observes:
            state = a.variant.store.finish(a.key, now, cost, rtt_s, failed)
            if a.layer.observes and state is not None:
                a.layer.current_limit = moving_limit(a.layer.algorithm, state, a.variant.store.params)
