"""Many clients rejected at once, retrying by a backoff policy: how much the retries amplify
the load and how long the herd takes to drain.

``clients`` clients of one application share one key (one API key, as a fleet of app installs
does) and each sends one POST at nearly the same instant. What rejects them together is the
``trigger``:

- ``burst``: the herd is far above the limiter's burst: most get 429 at once;
- ``outage``: the downstream is down from ``outage_at_s`` for ``outage_s`` (a health phase of
  the target's schedule, ``target_config``): whatever the limiter admits then is answered 503 at
  once, and every failed call still spent its token.

Each refusal (429 or 503) schedules that client's retry by ``backoff`` (optionally no earlier
than the answer's hint), until it is admitted and served, ``max_attempts`` is spent or its
``deadline_s`` would pass. Without jitter the refused clients retry in lockstep and collide
again; with jitter they spread over the refill (the AWS backoff study's result).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import numpy as np

from contract.params import Bounds
from contract.routes import REPORTS

from .backoff import Backoff, delays
from .base import (
    LEGIT,
    Arrivals,
    Clients,
    DecisionLike,
    ModelParams,
    Multiple,
    Request,
    ScenarioError,
    Seconds,
    Span,
    TrafficModel,
)
from .client_throttle import WINDOW_S, AdaptiveThrottle

ROUTE = REPORTS.model_name
KEY = "storm-app"
Trigger = Literal["burst", "outage"]
THROTTLES = ("none", "adaptive")


@dataclass(frozen=True)
class Params(ModelParams):
    clients: Clients = 100
    backoff: Backoff = "full_jitter"
    base_s: Span = 0.1
    """Scale base_s, cap_s and deadline_s with the policy's window: the defaults suit 10 per second."""
    cap_s: Span = 5.0
    max_attempts: Annotated[int, Bounds(1, 1_000)] = 30
    """Attempts per request, the first included."""
    deadline_s: Span = 60.0
    """A client gives up rather than retry later than this after its first send."""
    honour_retry_after: bool = False
    """true: never retry before Retry-After (the delay is the larger of the two)."""
    spread_s: Seconds = 0.0
    """First sends land uniformly within this many seconds (0: one instant)."""
    cost: Multiple = 1.0
    """Cost of the POST (a live target is configured to charge the same)."""
    trigger: Trigger = "burst"
    """burst: the herd alone exceeds the limiter; outage: the downstream answers 503 for a while."""
    outage_at_s: Seconds | None = None
    """trigger=outage: when the downstream goes down (model time; the first sends are at 0). Default 0."""
    outage_s: Span | None = None
    """trigger=outage: how long it stays down. Default 1."""
    client_throttle: str = "none"
    """adaptive: the application's clients also throttle themselves (Google SRE's client-side
    adaptive throttling, ``client_throttle.py``): a retry is dropped locally with probability
    max(0, (requests - K x accepts) / (requests + 1)) over the last ``throttle_window_s``."""
    throttle_k: Multiple = 2.0
    throttle_window_s: Span = WINDOW_S

    def check(self) -> None:
        if self.cap_s < self.base_s:
            raise ScenarioError(f"cap_s must be >= base_s ({self.base_s}), got {self.cap_s}")
        if self.client_throttle not in THROTTLES:
            raise ScenarioError(f"client_throttle must be one of {', '.join(THROTTLES)}, got {self.client_throttle!r}")
        for name in ("outage_at_s", "outage_s"):
            if self.trigger != "outage" and getattr(self, name) is not None:
                raise ScenarioError(f"{name} needs trigger=outage (the trigger is {self.trigger})")

    @property
    def outage_window(self) -> tuple[float, float] | None:
        """trigger=outage: (start, end) of the outage in model time."""
        if self.trigger != "outage":
            return None
        start = self.outage_at_s or 0.0
        return start, start + (self.outage_s or 1.0)


class RetryStorm(TrafficModel):
    name = "retry_storm"
    summary = ("N clients of one key rejected at once (trigger=burst: over the limit; trigger=outage: a downstream "
               "outage's 503s), retrying by a backoff policy (none ... decorrelated jitter)")
    reactive = True

    p: Params

    def __init__(self, limit: float, window_s: float, seed: int, params: Params) -> None:
        super().__init__(limit, window_s, seed, params)
        rng = np.random.default_rng(seed)
        self._first = np.sort(rng.uniform(0.0, params.spread_s, params.clients)) if params.spread_s else (
            np.zeros(params.clients))
        # each client's delays are fixed by the seed, so every algorithm meets the same clients
        uniforms = rng.random((params.clients, max(0, params.max_attempts - 1)))
        self._delays = [delays(params.backoff, params.base_s, params.cap_s, row) for row in uniforms.tolist()]
        self.reset()

    def reset(self) -> None:
        """The clients' throttle history starts empty in each replay."""
        self._throttle = AdaptiveThrottle(self.p.throttle_k, self.p.throttle_window_s)
        self._throttle_draws = np.random.default_rng(self.seed + 1)
        """The throttle's own uniform numbers, drawn in the order the answers arrive."""

    @property
    def max_cost(self) -> float:
        return self.p.cost

    def expected_requests(self) -> float:
        return self.p.clients * self.p.max_attempts

    def generate(self) -> Arrivals:
        return Arrivals.from_requests(
            Request(float(t), f"client-{i}", LEGIT, KEY, ROUTE, self.p.cost) for i, t in enumerate(self._first))

    def react(self, request: Request, decision: DecisionLike) -> Iterable[Request]:
        throttled = self.p.client_throttle == "adaptive"
        if throttled:
            if request.attempt == 1:
                self._throttle.sent_without_asking(request.t)
            if decision.allowed:
                self._throttle.accepted(request.t)
        if decision.allowed:
            return ()
        client = int(request.client_id.rpartition("-")[2])
        t, attempt = request.t, request.attempt
        while attempt < self.p.max_attempts:
            wait = self._delays[client][attempt - 1]
            if self.p.honour_retry_after and math.isfinite(decision.retry_after_s):
                wait = max(wait, decision.retry_after_s)
            t, attempt = t + wait, attempt + 1
            if t - self._first[client] > self.p.deadline_s:
                return ()
            if not throttled or self._throttle.attempt(t, float(self._throttle_draws.random())):
                return (request._replace(t=t, attempt=attempt),)
        return ()  # every attempt left was rejected locally (a local rejection is a failed attempt)

    def horizon_s(self) -> float:
        return float(self._first[-1]) + self.p.deadline_s

    def outage_schedule(self) -> list[dict[str, Any]]:
        """trigger=outage: the downstream health phases, in the target's config format (empty
        for a burst)."""
        window = self.p.outage_window
        if window is None:
            return []
        start, end = window
        down = [{"at_s": start, "health": "outage"}, {"at_s": end, "health": "recovered"}]
        return down if start == 0 else [{"at_s": 0.0, "health": "healthy"}, *down]

    def target_config(self) -> dict[str, Any]:
        config: dict[str, Any] = {"routes": {"reports": {"cost": self.p.cost}}}
        if self.p.trigger == "outage":
            config["downstream"] = {"schedule": self.outage_schedule()}
        return config
