"""Traffic: pure, seeded models (here) and, later, the Locust users that replay them live."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from . import (
    adversarial_drip,
    boundary_burst,
    cost_mix,
    downstream_breaks,
    edge_hunt,
    key_evasion,
    multi_node,
    page_load_burst,
    ramp,
    retry_storm,
    steady,
    store_failure,
    unhealthy_downstream,
)
from .base import Arrivals, Request, ScenarioError, TrafficModel
from .trace_file import TraceFile


@dataclass(frozen=True)
class ScenarioSpec:
    name: str
    summary: str
    model: type[TrafficModel]
    params: type


SCENARIOS: dict[str, ScenarioSpec] = {
    spec.name: spec
    for spec in (
        ScenarioSpec("steady", steady.Steady.summary, steady.Steady, steady.Params),
        ScenarioSpec("boundary_burst", boundary_burst.BoundaryBurst.summary, boundary_burst.BoundaryBurst,
                     boundary_burst.Params),
        ScenarioSpec("edge_hunt", edge_hunt.EdgeHunt.summary, edge_hunt.EdgeHunt, edge_hunt.Params),
        ScenarioSpec("page_load_burst", page_load_burst.PageLoadBurst.summary, page_load_burst.PageLoadBurst,
                     page_load_burst.Params),
        ScenarioSpec("adversarial_drip", adversarial_drip.AdversarialDrip.summary,
                     adversarial_drip.AdversarialDrip, adversarial_drip.Params),
        ScenarioSpec("cost_mix", cost_mix.CostMix.summary, cost_mix.CostMix, cost_mix.Params),
        ScenarioSpec("ramp", ramp.Ramp.summary, ramp.Ramp, ramp.Params),
        ScenarioSpec("unhealthy_downstream", unhealthy_downstream.UnhealthyDownstream.summary,
                     unhealthy_downstream.UnhealthyDownstream, unhealthy_downstream.Params),
        ScenarioSpec("downstream_breaks", downstream_breaks.DownstreamBreaks.summary,
                     downstream_breaks.DownstreamBreaks, downstream_breaks.Params),
        ScenarioSpec("retry_storm", retry_storm.RetryStorm.summary, retry_storm.RetryStorm, retry_storm.Params),
        ScenarioSpec("key_evasion", key_evasion.KeyEvasion.summary, key_evasion.KeyEvasion, key_evasion.Params),
        ScenarioSpec("multi_node", multi_node.MultiNode.summary, multi_node.MultiNode, multi_node.Params),
        ScenarioSpec("store_failure", store_failure.StoreFailure.summary, store_failure.StoreFailure,
                     store_failure.Params),
    )
}


def build_model(name: str, limit: float, window_s: float, seed: int = 0,
                overrides: Mapping[str, Any] | None = None) -> TrafficModel:
    """A model for a policy's L and W; ``overrides`` are scenario parameters, as text
    (``KEY=VALUE``) or typed (a campaign's YAML)."""
    spec = SCENARIOS.get(name)
    if spec is None:
        raise ScenarioError(f"unknown scenario {name!r}; choose from: {', '.join(SCENARIOS)}")
    return spec.model(limit, window_s, seed, spec.params.build(overrides or {}))


__all__ = ["SCENARIOS", "Arrivals", "Request", "ScenarioError", "TraceFile", "TrafficModel", "build_model"]
