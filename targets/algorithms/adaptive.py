"""Adaptive concurrency limit: at most ``limit`` cost units in flight, where the limit itself
moves with what the protected service shows (latency; for some rules CPU or load).

The ``rule`` parameter picks the judgement, each a port of a limiter people deploy
(``adaptive_rules/``, every module citing its source): ``gradient2`` (default), ``aimd`` and
``vegas`` (Netflix concurrency-limits), ``envoy`` (Envoy's gradient controller),
``sentinel_bbr`` and ``sentinel_cpu`` (Alibaba Sentinel's system rule), ``gozero`` (go-zero's
adaptive shedder). ``window=average`` feeds Netflix's three through its ``WindowedLimit``.

The interface is the same for every rule, live and in virtual time:

- ``decide(state, now, cost, p)`` admits while the rule allows (the limit's integer part minus
  what is in flight, for the limit rules) and may fire the rule's timers;
- ``observe(state, now, rtt_s, p, failed=False)`` folds one completed request's latency in;
  call it before ``release`` so ``in_flight`` still counts the request; ``failed`` marks a 503
  (go-zero skips its sample);
- ``release(state, now, cost, p)`` gives its slots back;
- ``observe_reading(state, now, reading, p)`` folds one ``Reading`` (CPU, load) in, for the
  rules whose ``reads`` is true: the live target samples its own process off the hot path; it
  the simulator feeds its model's CPU through it (``harness/sim/simulator.py``).

State: ``(limit, in flight, the rule's memo)``. The limit is a float (smooth updates); what a
client sees in ``X-Concurrency-Limit`` is its integer part (``current_limit``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from contract.params import Bounds

from .adaptive_rules import RULES, WINDOWABLE, Reading, Rule, windowed
from .base import INF, Algorithm, Decision, new_decision
from .policy import Policy, PolicyError, require_positive

State = tuple[float, float, Any]
RuleName = Literal["gradient2", "aimd", "vegas", "envoy", "sentinel_bbr", "sentinel_cpu", "gozero"]
WindowKind = Literal["none", "average"]
WINDOWS = ("none", "average")
JUDGES: dict[tuple[str, str], Rule] = {
    **{(name, "none"): rule for name, rule in RULES.items()},
    **{(name, "average"): windowed(RULES[name]) for name in WINDOWABLE},
}
"""The rule each (rule, window) selects, built once: ``Params`` stays a plain picklable
dataclass, and the hot path looks its judge up in one dict."""


@dataclass(frozen=True, slots=True)
class Params:
    max_limit: float
    initial_limit: float
    min_limit: float = 1.0
    rule: RuleName = "gradient2"
    window: WindowKind = "none"
    """``average``: Netflix ``WindowedLimit`` in front of the rule (one sample per window)."""
    seed: int = 0
    """Seeds the rules' jitter (Vegas's probe, Envoy's minRTT interval)."""
    # gradient2
    smoothing: float = 0.2
    tolerance: float = 1.5
    long_window: Annotated[int, Bounds(1, 1_000_000)] = 600
    queue_size: float = 4.0
    # aimd
    backoff_ratio: float = 0.9
    timeout_s: float = 0.25
    increase: float = 1.0
    # vegas (alpha and beta multiply log10root(limit), as the source's default functions)
    vegas_alpha: float = 3.0
    vegas_beta: float = 6.0
    vegas_smoothing: float = 1.0
    vegas_probe_multiplier: float = 30.0
    # envoy
    envoy_percentile: float = 50.0
    envoy_interval_s: float = 0.1
    envoy_min_rtt_interval_s: float = 60.0
    envoy_request_count: int = 50
    envoy_min_concurrency: int = 3
    envoy_jitter: float = 0.15
    envoy_buffer: float = 0.25
    # sentinel_bbr, sentinel_cpu, gozero
    sentinel_load_threshold: float = 5.0
    cpu_threshold: float = 0.9
    gozero_window_s: float = 5.0
    gozero_buckets: int = 50
    gozero_cool_off_s: float = 1.0
    # windowed (window=average)
    window_min_s: float = 1.0
    window_max_s: float = 1.0
    window_size: int = 10
    window_min_rtt_s: float = 1e-4
    hold_s: float = 0.1
    """Retry-After hint (the simulator holds a slot until the simulated completion: harness/sim/system.py)."""

    def __post_init__(self) -> None:
        require_positive(self, "max_limit", "initial_limit", "min_limit", "timeout_s", "hold_s")
        if self.rule not in RULES:
            raise PolicyError(f"rule must be one of {', '.join(RULES)}, got {self.rule!r}")
        if self.window not in WINDOWS:
            raise PolicyError(f"window must be one of {', '.join(WINDOWS)}, got {self.window!r}")
        if not self.min_limit <= self.initial_limit <= self.max_limit:
            raise PolicyError(f"need min_limit <= initial_limit <= max_limit, got "
                              f"{self.min_limit} / {self.initial_limit} / {self.max_limit}")
        if (self.rule, self.window) not in JUDGES:
            raise PolicyError(f"window={self.window} wraps only Netflix's limits ({', '.join(WINDOWABLE)}), "
                              f"not rule={self.rule}")
        JUDGES[self.rule, self.window].check(self)


def from_policy(policy: Policy) -> Params:
    """The policy's burst is the ceiling and the starting point: the limit can only be lowered
    by latency, then recover, so it is compared fairly with ``concurrency`` at the same burst."""
    burst = policy.effective_burst
    return Params(max_limit=burst, initial_limit=burst, min_limit=min(1.0, burst))


def _fresh(p: Params) -> State:
    limit, memo = JUDGES[p.rule, p.window].fresh(p)
    return (limit, 0.0, memo)


def decide(state: State | None, now: float, cost: float, p: Params) -> tuple[Decision, State]:
    limit, in_flight, memo = state or _fresh(p)
    allowed, limit, memo = JUDGES[p.rule, p.window].admit(limit, in_flight, memo, now, cost, p)
    room = max(0.0, math.floor(limit) - in_flight)
    if allowed:
        return new_decision(Decision, (True, max(0.0, room - cost), 0.0, p.hold_s, 0.0)), (limit, in_flight + cost, memo)
    retry = p.hold_s if cost <= p.max_limit else INF
    return new_decision(Decision, (False, room, retry, p.hold_s, 0.0)), (limit, in_flight, memo)


def release(state: State | None, now: float, cost: float, p: Params) -> State:
    limit, in_flight, memo = state or _fresh(p)
    in_flight = max(0.0, in_flight - cost)
    limit, memo = JUDGES[p.rule, p.window].released(limit, memo, in_flight, p)
    return (limit, in_flight, memo)


def observe(state: State | None, now: float, rtt_s: float, p: Params, *, failed: bool = False) -> State:
    """Fold one completed request's latency into the limit (call before ``release``, so that
    ``in_flight`` still counts the request, as Netflix's limiter sees it). ``failed``: the
    response was a 503, which go-zero does not sample (the other rules do, as their sources)."""
    limit, in_flight, memo = state or _fresh(p)
    if failed and not JUDGES[p.rule, p.window].samples_failures:
        return (limit, in_flight, memo)
    limit, memo = JUDGES[p.rule, p.window].sample(limit, in_flight, memo, now, rtt_s, p)
    return (limit, in_flight, memo)


def observe_reading(state: State | None, now: float, reading: Reading, p: Params) -> State:
    """Fold one CPU/load reading in (only the rules whose ``reads`` is true look at it)."""
    limit, in_flight, memo = state or _fresh(p)
    limit, memo = JUDGES[p.rule, p.window].read(limit, memo, now, reading, p)
    return (limit, in_flight, memo)


def reads(p: Params) -> bool:
    """Whether these params' rule needs CPU/load readings (the live target samples only then)."""
    return JUDGES[p.rule, p.window].reads


def current_limit(state: State | None, p: Params) -> int:
    """The admission limit a client sees (integer part of the smoothed limit)."""
    return math.floor((state or _fresh(p))[0])


ALGORITHM = Algorithm(
    name="adaptive",
    summary="concurrency limit moved by the service's latency or CPU (rule=gradient2, aimd, vegas, envoy, "
            "sentinel_bbr, sentinel_cpu, gozero)",
    params_type=Params,
    params_from_policy=from_policy,
    decide=decide,
    state_ttl=lambda p: math.inf,  # the learned limit and in-flight counts must survive idle time
    max_cost=lambda p: p.max_limit,
    scope="global",  # it guards the downstream as a whole, not a client
    release=release,
    observe=observe,
    current_limit=current_limit,
    observe_reading=observe_reading,
    reads=reads,
)
