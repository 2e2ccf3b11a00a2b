"""``/metrics`` in Prometheus text format: decisions and rejections by limit, each adaptive
layer's current limit, and the downstream's in-flight and queued work.

One registry per app (not the process-global one), so several apps in one test process do not
collide. Counter children are bound once per limit: the request path pays one ``inc``.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

from .downstream import Downstream
from .limits import Layer


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
        Gauge("downstream_in_flight", "Requests being served by the downstream",
              registry=self.registry).set_function(lambda: downstream.counters.in_flight)
        Gauge("downstream_waiting", "Requests queued for a downstream slot",
              registry=self.registry).set_function(lambda: downstream.counters.waiting)

    def count(self, limit: str) -> tuple[float, float]:
        """(decisions, rejections) so far for one limit."""
        get = self.registry.get_sample_value
        return get("ratelimit_decisions_total", {"limit": limit}) or 0.0, get("ratelimit_rejections_total", {"limit": limit}) or 0.0

    def render(self) -> bytes:
        return generate_latest(self.registry)
