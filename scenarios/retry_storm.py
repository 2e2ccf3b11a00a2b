"""Many clients rejected at once, retrying by a backoff policy: how much the retries amplify
the load and how long the herd takes to drain.

``clients`` clients of one application share one key (one API key, as a fleet of app installs
does) and each sends one POST at nearly the same instant: far above the limiter's burst, so most
are rejected together. Each rejection schedules that client's retry by ``backoff`` (optionally
no earlier than Retry-After), until it is admitted, ``max_attempts`` is spent or its
``deadline_s`` would pass. Without jitter the rejected clients retry in lockstep and collide
again; with jitter they spread over the refill (the AWS backoff study's result).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .backoff import POLICIES, delays
from .base import LEGIT, Arrivals, DecisionLike, ModelParams, Request, ScenarioError, TrafficModel, non_negative, positive

ROUTE = "POST /api/reports"
KEY = "storm-app"


@dataclass(frozen=True)
class Params(ModelParams):
    clients: int = 100
    backoff: str = "full_jitter"
    """none | fixed | exponential | full_jitter | equal_jitter | decorrelated."""
    base_s: float = 0.1
    """Scale base_s, cap_s and deadline_s with the policy's window: the defaults suit 10 per second."""
    cap_s: float = 5.0
    max_attempts: int = 30
    """Attempts per request, the first included."""
    deadline_s: float = 60.0
    """A client gives up rather than retry later than this after its first send."""
    honour_retry_after: int = 0
    """1: never retry before Retry-After (the delay is the larger of the two)."""
    spread_s: float = 0.0
    """First sends land uniformly within this many seconds (0: one instant)."""
    cost: float = 1.0
    """Cost of the POST (a live target is configured to charge the same)."""

    def check(self) -> None:
        positive("clients", self.clients)
        if self.backoff not in POLICIES:
            raise ScenarioError(f"backoff must be one of {', '.join(POLICIES)}, got {self.backoff!r}")
        positive("base_s", self.base_s)
        positive("cap_s", self.cap_s)
        if self.cap_s < self.base_s:
            raise ScenarioError(f"cap_s must be >= base_s ({self.base_s}), got {self.cap_s}")
        positive("max_attempts", self.max_attempts)
        positive("deadline_s", self.deadline_s)
        if self.honour_retry_after not in (0, 1):
            raise ScenarioError(f"honour_retry_after must be 0 or 1, got {self.honour_retry_after}")
        non_negative("spread_s", self.spread_s)
        positive("cost", self.cost)


class RetryStorm(TrafficModel):
    name = "retry_storm"
    summary = "N clients of one key rejected at once, retrying by a backoff policy (none ... decorrelated jitter)"
    reactive = True

    def __init__(self, limit: float, window_s: float, seed: int, params: Params) -> None:
        self.limit, self.window_s, self.seed, self.p = limit, window_s, seed, params
        rng = np.random.default_rng(seed)
        self._first = np.sort(rng.uniform(0.0, params.spread_s, params.clients)) if params.spread_s else (
            np.zeros(params.clients))
        # each client's delays are fixed by the seed, so every algorithm meets the same clients
        uniforms = rng.random((params.clients, max(0, params.max_attempts - 1)))
        self._delays = [delays(params.backoff, params.base_s, params.cap_s, row) for row in uniforms.tolist()]

    @property
    def max_cost(self) -> float:
        return self.p.cost

    def generate(self) -> Arrivals:
        return Arrivals.from_requests(
            Request(float(t), f"client-{i}", LEGIT, KEY, ROUTE, self.p.cost) for i, t in enumerate(self._first))

    def react(self, request: Request, decision: DecisionLike) -> Iterable[Request]:
        if decision.allowed or request.attempt >= self.p.max_attempts:
            return ()
        client = int(request.client_id.rpartition("-")[2])
        wait = self._delays[client][request.attempt - 1]
        if self.p.honour_retry_after and math.isfinite(decision.retry_after_s):
            wait = max(wait, decision.retry_after_s)
        t = request.t + wait
        if t - self._first[client] > self.p.deadline_s:
            return ()
        return (request._replace(t=t, attempt=request.attempt + 1),)

    def horizon_s(self) -> float:
        return float(self._first[-1]) + self.p.deadline_s

    def target_config(self) -> dict[str, Any]:
        return {"routes": {"reports": {"cost": self.p.cost}}}
