"""Layered limits: which limits apply to a route, and the all-or-nothing check across them.

A route has a list of layers, narrowest first (e.g. per-user, then the tenant's quota). Every
layer is asked; the first that rejects decides and nothing is consumed anywhere (layers are
peeked, then committed only when all admit). One layer (the common case) takes the store's
single ``decide`` call. A layer whose scope is absent from the request (no tenant header, say)
does not apply. Tiers (free, VIP...) select a layer's own policy and store by the tier header.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

from .algorithms import Algorithm, Decision, get_algorithm
from .algorithms import adaptive as adaptive_algorithm
from .config import API_ROUTES, ROUTE_PATHS, LimitConfig, TargetConfig, resolve_params
from .headers import QuotaText
from .keys import Identity
from .stores.memory import MemoryStore


@dataclass
class Variant:
    """A layer's policy for one tier: its own store, quota and header item."""

    store: MemoryStore
    text: QuotaText


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

    def variant(self, tier: str | None) -> Variant:
        return self.variants.get(tier) or self.variants[None]

    def refresh_limit(self, store: MemoryStore, key: str) -> None:
        state = store.state(key)
        if state is not None:
            self.current_limit = adaptive_algorithm.current_limit(state, store.params)


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


@dataclass
class RoutePlan:
    name: str
    cost: float
    layers: list[Layer]
    needs_account: bool


def build_layers(config: TargetConfig) -> tuple[list[Layer], dict[tuple[str, str], RoutePlan]]:
    """Every layer with its stores, and the plan for each limited (method, path)."""
    layers: list[tuple[LimitConfig, Layer]] = []
    for lc in config.layers():
        variants = {}
        for tier_name, tier in [(None, None), *lc.tiers.items()]:
            name, policy, params = resolve_params(config, lc, tier)
            algorithm = get_algorithm(name)
            store = MemoryStore(algorithm, params, max_keys=config.store.max_keys, idle_ttl_s=config.store.idle_ttl_s)
            window = None if algorithm.release is not None else policy.window_s
            quota = algorithm.max_cost(params) if algorithm.release is not None else policy.limit
            variants[tier_name] = Variant(store, QuotaText.of(lc.name, quota, window))
        algorithm = variants[None].store.algorithm
        layer = Layer(lc.name, lc.scope, algorithm, variants, holds=algorithm.release is not None,
                      observes=algorithm.observe is not None)
        if layer.observes:
            layer.current_limit = adaptive_algorithm.current_limit(None, variants[None].store.params)
        layers.append((lc, layer))
    routes = {}
    for route, method_path in ROUTE_PATHS.items():
        chosen = [layer for lc, layer in layers if route in (lc.routes or API_ROUTES)]
        routes[method_path] = RoutePlan(route, config.cost(route), chosen, any(la.scope == "account" for la in chosen))
    return [layer for _, layer in layers], routes


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


def complete(verdict: Verdict, cost: float, rtt_s: float) -> None:
    """After an admitted request finished: latency samples, then slots given back."""
    now = time.time()
    for a in verdict.applied:
        if a.layer.observes:
            a.variant.store.observe(a.key, now, rtt_s)
            a.layer.refresh_limit(a.variant.store, a.key)
        if a.layer.holds:
            a.variant.store.release(a.key, now, cost)
