"""mholt/caddy-ratelimit's ring buffer, one zone and key: the model of the ``caddy`` peer, not one
of the suite's targets' algorithms (``PEER_MODELS``). Its module is not in the Caddy builds a
registry here ships (they lack ``http.handlers.rate_limit``); this is a model of
mholt/caddy-ratelimit @5625512f (2026-06-12), read from its source:

- a ring of ``max_events`` timestamps of **admitted** requests, the cursor on the oldest
  (``ringbuffer.go:26-31``, starting at the zero time);
- a request is admitted iff ``now - ring[cursor] > window`` (strictly), which writes ``now`` there
  and advances the cursor (``ringbuffer.go:66-84``): an exact sliding log of admissions; a refused
  request records nothing; ``max_events: 0`` admits nothing (``:67-69``);
- ``When()``, the wait a refusal reports, is ``ring[cursor] + window - now`` (``:53-60``).
Time is the suite's whole µs (Go's is ns: equal admissions but within 1 µs of an edge).
"""

from __future__ import annotations

from .base import Algorithm, Decision, new_decision
from .policy import PolicyError, WindowParams

State = tuple[int, ...]  # the admissions' times in whole µs, oldest first, at most max_events


class Params(WindowParams):
    def __post_init__(self) -> None:
        super().__post_init__()
        if self.limit != int(self.limit):
            raise PolicyError(f"caddy_ring: max_events {self.limit:g} is not a whole number of events")


def from_policy(policy) -> Params:
    return Params(policy.limit, policy.window_s)


def decide(state: State | None, now: float, cost: float, p: Params) -> tuple[Decision, State]:
    t, ring = int((now * 1e6 + 0.5) // 1), state or ()
    size = int(p.limit)
    if len(ring) < size or t - ring[0] > p.window_us:  # a slot never written holds the zero time
        ring = (*ring, t)[-size:]
        inside = sum(1 for e in ring if t - e <= p.window_us)
        return new_decision(Decision, (True, float(size - inside), 0.0, (ring[0] + p.window_us - t) / 1e6, 0.0)), ring
    wait = (ring[0] + p.window_us - t) / 1e6
    return new_decision(Decision, (False, 0.0, wait, wait, 0.0)), ring


ALGORITHM = Algorithm(
    name="caddy_ring",
    summary="caddy-ratelimit: an exact sliding log of admitted requests (a ring of max_events times)",
    params_type=Params,
    params_from_policy=from_policy,
    decide=decide,
    state_ttl=lambda p: p.window_s,
    max_cost=lambda p: 1.0,
)
