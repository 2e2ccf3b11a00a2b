"""Pure algorithm cores, one module per algorithm, and the registry that names them.

Names here are the names used everywhere: CLI, config, logs, charts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import (
    adaptive,
    caddy_ring,
    concurrency,
    envoy_local_ratelimit,
    envoy_ratelimit_window,
    fixed_block,
    fixed_window,
    gcra,
    haproxy_freq_ctr,
    kong_window,
    leaky_bucket,
    limits_fixed_window,
    limits_sliding_window_counter_redis,
    none,
    sliding_log,
    sliding_window_counter,
    sliding_window_ring,
    token_bucket,
    traefik_rate,
)
from .base import Algorithm, Decision
from .policy import Policy, PolicyError, apply_overrides, parse_param

ALGORITHMS: dict[str, Algorithm] = {
    m.ALGORITHM.name: m.ALGORITHM
    for m in (
        fixed_window,
        sliding_log,
        sliding_window_counter,
        sliding_window_ring,
        token_bucket,
        leaky_bucket,
        gcra,
        concurrency,
        adaptive,
        none,
    )
}

PEER_MODELS: dict[str, Algorithm] = {m.ALGORITHM.name: m.ALGORITHM for m in (
    haproxy_freq_ctr, limits_fixed_window, limits_sliding_window_counter_redis, traefik_rate,
    envoy_local_ratelimit, envoy_ratelimit_window, kong_window, caddy_ring, fixed_block)}
"""Models of peer targets' own algorithms (docs/peers.md) that no suite algorithm matches: they
decide in the simulator and the faithfulness checks, never in ``all`` nor on Redis."""


def get_algorithm(name: str) -> Algorithm:
    try:
        return ALGORITHMS.get(name) or PEER_MODELS[name]
    except KeyError:
        raise PolicyError(f"unknown algorithm {name!r}; choose from: {', '.join(ALGORITHMS)}") from None


def build_params(name: str, policy: Policy, overrides: Mapping[str, Any] | None = None) -> Any:
    """The algorithm's own parameters for a common policy, with ``--param`` overrides applied."""
    algorithm = get_algorithm(name)
    return apply_overrides(algorithm.params_from_policy(policy), overrides or {}, name)


__all__ = ["ALGORITHMS", "PEER_MODELS", "Algorithm", "Decision", "Policy", "PolicyError", "build_params",
           "get_algorithm", "parse_param"]
