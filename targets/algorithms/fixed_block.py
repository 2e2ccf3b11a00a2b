"""A sliding log that blocks a key once it trips: the model of a mitigation timeout ("block for
T once over the rate"), not one of the suite's targets' algorithms (``PEER_MODELS``).

A key is admitted while it has fewer than L admitted requests in the last W (``sliding_log``);
the refusal that trips it blocks it for ``block_s`` from that refusal, every request refused
meanwhile, after which it starts over with an empty log. ``extend``: each request refused
during the block restarts it (a penalty box that knocking extends). Cloudflare's rate limiting
rules (``mitigation_timeout``) are modelled by it, approximately: Cloudflare does not document
whether its counter over ``period`` is fixed or sliding (harness/campaign/peers/cloudflare.py);
the fingerprint fits both variants (harness/sim/stateful.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from . import sliding_log
from .base import Algorithm, Decision, derive, micros, new_decision
from .policy import Policy, WindowParams, require_positive

State = tuple[Any, float | None]  # (the sliding log's state, the block's end in µs or None)


@dataclass(frozen=True)
class Params(WindowParams):
    block_s: float = 60.0
    extend: bool = False
    block_us: ClassVar[float]

    def __post_init__(self) -> None:
        super().__post_init__()
        require_positive(self, "block_s")
        derive(self, block_us=micros(self.block_s))


def from_policy(policy: Policy) -> Params:
    """L per W, blocked for one W once tripped (``block_s`` is the product's own setting: ``--param``)."""
    return Params(policy.limit, policy.window_s, policy.window_s)


def decide(state: State | None, now: float, cost: float, p: Params) -> tuple[Decision, State]:
    t = (now * 1e6 + 0.5) // 1.0
    log, until = (None, None) if state is None else state
    if until is not None:
        if t < until:
            until = t + p.block_us if p.extend else until
            return new_decision(Decision, (False, 0.0, (until - t) / 1e6, (until - t) / 1e6 + p.window_s, 0.0)), (log, until)
        log, until = None, None  # the block is over: a fresh key
    decision, log = sliding_log.decide(log, now, cost, p)
    if decision.allowed:
        return decision, (log, None)
    return new_decision(Decision, (False, 0.0, p.block_s, p.block_s + p.window_s, 0.0)), (log, t + p.block_us)


ALGORITHM = Algorithm(
    name="fixed_block",
    summary="a sliding log of L per W that blocks a key for block_s once it trips (a mitigation timeout)",
    params_type=Params,
    params_from_policy=from_policy,
    decide=decide,
    state_ttl=lambda p: p.window_s + p.block_s,
    max_cost=lambda p: p.limit,
)
