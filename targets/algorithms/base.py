"""What every algorithm core returns and how it is described.

An algorithm is a pure transition ``decide(state, now, cost, params) -> (Decision, state)``:
no clock, no I/O, no mutation of the state it was given. ``state`` is ``None`` for a key that
was never seen (or whose state expired), so a new key starts fresh: full bucket, empty window.
A rejected request consumes nothing; the returned state may only differ from the given one by
bookkeeping that does not change any later decision (e.g. expired entries dropped).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

INF = math.inf


new_decision = tuple.__new__
"""``new_decision(Decision, (allowed, remaining, retry_after_s, reset_s, delay_s))``: builds a
Decision without the Python-level NamedTuple constructor, which costs more than a whole
fixed-window decision on the hot path."""


class Decision(NamedTuple):
    """The verdict on one request, with everything a 429 or the RateLimit headers need."""

    allowed: bool
    remaining: float
    """Cost units still admissible right now after this decision (never negative)."""
    retry_after_s: float
    """0 when allowed; else seconds until a request of the same cost would be admitted
    (``inf`` when the cost can never be admitted)."""
    reset_s: float
    """Seconds until the quota is fully restored if no more requests arrive."""
    delay_s: float = 0.0
    """Queueing algorithms only: how long to hold an admitted request before serving it."""


@dataclass(frozen=True)
class Algorithm:
    """One algorithm: its pure transition plus what the stores and the CLI need to know."""

    name: str
    summary: str
    params_type: type
    params_from_policy: Callable[[Any], Any]
    """Maps the common policy (L per W, burst) onto this algorithm's own parameters."""
    decide: Callable[[Any, float, float, Any], tuple[Decision, Any]]
    state_ttl: Callable[[Any], float]
    """Seconds after its last touch when a key's state is certainly equivalent to a fresh one;
    stores use it as the idle TTL, so expiring a key never changes a decision."""
    max_cost: Callable[[Any], float]
    """The largest cost a single request can ever be admitted with."""
    release: Callable[[Any, float, float, Any], Any] | None = None
    """Concurrency-style algorithms: give back ``cost`` slots when a request finishes."""
    observe: Callable[[Any, float, float, Any], Any] | None = None
    """Latency-driven algorithms: ``observe(state, now, rtt_s, params) -> state`` folds one
    completed request's latency into the state (the live target calls it; the simulator has
    no real latency and does not)."""
