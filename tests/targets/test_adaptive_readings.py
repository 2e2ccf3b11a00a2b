"""The live side of the CPU/load seam: a reading reaches every key of the layers whose rule
reads it, and changes their decisions and shown limit; other layers are left alone."""

from __future__ import annotations

from targets.algorithms.adaptive_rules import Reading
from targets.config import TargetConfig
from targets.layers import build_layers
from targets.readings import push, reading_layers


def _layer(rule: str):
    config = TargetConfig.model_validate({"algorithm": "adaptive", "limit": 100, "window_s": 1, "burst": 8,
                                          "params": {"rule": rule, "cpu_threshold": 0.8}})
    return build_layers(config)[0]


def test_a_cpu_reading_over_the_threshold_refuses_and_shows_limit_zero():
    layers = _layer("sentinel_cpu")
    assert reading_layers(layers) == layers
    store = layers[0].variants[None].store
    assert store.decide("global", 0.0, 1)[0]
    push(layers, 0.1, Reading(cpu=0.9))
    assert not store.decide("global", 0.2, 1)[0] and layers[0].current_limit == 0
    push(layers, 0.3, Reading(cpu=0.5))
    assert store.decide("global", 0.4, 1)[0] and layers[0].current_limit == 8


def test_latency_rules_are_not_sampled():
    assert reading_layers(_layer("gradient2")) == []


def test_a_push_keeps_one_reading_per_store_and_every_key_decides_on_it():
    """A push costs O(1) whatever the number of keys (it rewrote every key's state under the
    lock); each key folds the reading in at its next decision, as if it had been pushed into it."""
    config = TargetConfig.model_validate({"algorithm": "adaptive", "limit": 100, "window_s": 1, "burst": 8,
                                          "limits": [{"name": "per-ip", "scope": "ip",
                                                      "params": {"rule": "sentinel_cpu", "cpu_threshold": 0.8}}]})
    layers = build_layers(config)[0]
    store = layers[0].variants[None].store
    for key in ("a", "b"):
        assert store.decide(key, 0.0, 1)[0]
    before = {key: store.state(key) for key in ("a", "b")}
    push(layers, 0.1, Reading(cpu=0.9))
    assert {key: store.state(key) for key in ("a", "b")} == before and all(
        store.state(k) is before[k] for k in before)
    assert layers[0].current_limit == 0
    assert not store.decide("a", 0.2, 1)[0] and not store.decide("b", 0.2, 1)[0]
    push(layers, 0.3, Reading(cpu=0.5))
    assert store.decide("b", 0.4, 1)[0] and layers[0].current_limit == 8
