"""A model standing in for an endpoint, on a virtual clock: the hunt's own test bench, where the
truth is known (which model, which L and W) and nothing waits for real time."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from analysis.header_truth import Answer
from contract.limit_headers import LimitFields
from harness.sim.fingerprint import transition
from targets.algorithms import Policy

from .endpoint import CapReached, Sent


@dataclass
class VirtualEndpoint:
    """``model`` under ``policy`` answering at ``start`` (epoch seconds), each request taking
    ``service_s`` and the hold its model decided (``Decision.delay_s``: Traefik's); with
    ``headers`` its answers carry the draft fields the suite's targets send."""

    model: str
    policy: Policy
    start: float = 1_764_000_000.0137
    service_s: float = 0.002
    max_requests: int = 1000
    headers: bool = True
    extra: float | None = None
    """A stateful model's third parameter (``harness.sim.stateful``)."""
    log: list[Sent] = field(default_factory=list)
    before: list[Sent] = field(default_factory=list)
    _states: dict[int, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._clock = self.start
        self._decide, _, self._params = transition(self.model, self.policy, self.extra)

    def now(self) -> float:
        return self._clock

    def sleep_until(self, t: float) -> None:
        self._clock = max(self._clock, t)

    def send(self, key: int, role: str) -> Answer:
        if len(self.log) >= self.max_requests:
            raise CapReached.requests()
        sent = self._clock
        decision, self._states[key] = self._decide(self._states.get(key), sent + self.service_s / 2, 1.0,
                                                             self._params)
        self._clock = done = sent + self.service_s + decision.delay_s  # a held request is answered that much later
        fields = LimitFields()
        if self.headers and math.isfinite(decision.remaining):  # ``none`` has nothing to tell
            fields = LimitFields(None if decision.allowed else max(1.0, math.ceil(decision.retry_after_s)),
                                 self.policy.limit, self.policy.window_s, math.floor(decision.remaining),
                                 math.ceil(decision.reset_s), "ietf-list")
        answer = Answer(f"k{key}", sent, done, 200 if decision.allowed else 429, fields)
        self.log.append(Sent(answer, role, f"k{key}"))
        return answer
