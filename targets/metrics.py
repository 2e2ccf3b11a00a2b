"""``/metrics`` in Prometheus text format: decisions and rejections by limit, each adaptive
layer's current limit, and the downstream's in-flight and queued work. Layers on Redis add their
decisions by source (redis, fallback = fail-open, fail_closed) and the failover's counters
(errors, outages, degraded decisions, down).

One registry per app (not the process-global one), so several apps in one test process do not
collide. Counter children are bound once per limit: the request path pays one ``inc``.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

from .downstream import Downstream
from .layers import Layer, remote_stores

REDIS_GAUGES = {
    "redis_errors": "Redis calls that failed or timed out",
    "redis_outages": "Redis outages started (fail-open or fail-closed)",
    "redis_degraded_decisions": "Decisions made without Redis (local fallback or fail-closed)",
    "redis_down": "1 while Redis is unavailable",
}


class Metrics:
    def __init__(self, layers: list[Layer], downstream: Downstream) -> None:
        self.registry = CollectorRegistry()
        decisions = Counter("ratelimit_decisions", "Limiter decisions", ["limit"], registry=self.registry)
        rejections = Counter("ratelimit_rejections", "Rejected decisions (429)", ["limit"], registry=self.registry)
        adaptive = Gauge("ratelimit_adaptive_limit", "Current adaptive concurrency limit", ["limit"],
                         registry=self.registry)
        self.decided = {layer.name: decisions.labels(layer.name) for layer in layers}
        self.rejected = {layer.name: rejections.labels(layer.name) for layer in layers}
        for layer in layers:
            if layer.observes:
                adaptive.labels(layer.name).set_function(lambda layer=layer: layer.current_limit)
        by_source = Counter("ratelimit_decisions_by_source", "Decisions of Redis layers by who decided",
                            ["limit", "source"], registry=self.registry)
        self.sourced = _Children(by_source)
        stores = remote_stores(layers)
        for metric, text in REDIS_GAUGES.items():
            gauge = Gauge(f"ratelimit_{metric}", text, ["limit"], registry=self.registry)
            for name in {name for name, _ in stores}:
                mine = [store for n, store in stores if n == name]
                gauge.labels(name).set_function(lambda mine=mine, metric=metric: sum(s.metrics()[metric] for s in mine))
        Gauge("downstream_in_flight", "Requests being served by the downstream",
              registry=self.registry).set_function(lambda: downstream.counters.in_flight)
        Gauge("downstream_waiting", "Requests queued for a downstream slot",
              registry=self.registry).set_function(lambda: downstream.counters.waiting)

    def count(self, limit: str) -> tuple[float, float]:
        """(decisions, rejections) so far for one limit."""
        get = self.registry.get_sample_value
        return get("ratelimit_decisions_total", {"limit": limit}) or 0.0, get("ratelimit_rejections_total", {"limit": limit}) or 0.0

    def by_source(self, limit: str) -> dict[str, int]:
        """Decisions of a Redis layer so far by source."""
        get = self.registry.get_sample_value
        return {source: int(get("ratelimit_decisions_by_source_total", {"limit": name, "source": source}) or 0)
                for name, source in list(self.sourced) if name == limit}

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _Children(dict):
    """Counter children by label values, bound on first use."""

    def __init__(self, counter: Counter) -> None:
        super().__init__()
        self.counter = counter

    def __missing__(self, labels: tuple[str, ...]) -> object:
        child = self[labels] = self.counter.labels(*labels)
        return child
