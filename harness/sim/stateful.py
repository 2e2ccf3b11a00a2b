"""Stateful behaviours products have, as models the fingerprint fits: what a key's state does
between requests, beyond a window or a bucket.

- ``forgetful_token_bucket``: a token bucket (burst B, L per W) whose state is dropped after
  ``idle_s`` without a request of its key, and recreated full (a reverse proxy's bucket cache
  with a ttl): a key that pauses ``idle_s`` comes back with a whole burst, however empty it was;
- ``forgetful_window``: a counter of L per W opened by a key's first request (refused requests
  count, as ``limits_fixed_window``), dropped after ``idle_s`` without a request, and recreated
  empty (a counter kept in a cache whose ttl is shorter than the window);
- ``fixed_block`` (the registry's peer model, ``targets/algorithms/fixed_block.py``): a sliding log
  of L in any W; the refusal that trips it blocks the key for
  ``block_s`` from that refusal (every request refused, whatever it does meanwhile), after which
  the key starts over with an empty log (a mitigation timeout: "block for T once over the rate");
- ``extended_block``: the same, but each request refused during the block restarts it: a key
  comes back only ``block_s`` after its last refused request (a penalty box that knocking extends);
- ``counting_log``: a sliding log of L in any W in which refused requests count too (a client that
  keeps knocking faster than L per W is refused for as long as it knocks).

Each is a pure transition, like the suite's algorithms (``targets/algorithms/base.py``): time in
whole µs, ``decide(state, now, cost, params) -> (Decision, state)``, ``None`` a fresh key. Their
third parameter (``idle_s`` or ``block_s``, the fit's ``extra``) is fitted beside L and W.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from targets.algorithms import Policy, PolicyError, get_algorithm
from targets.algorithms.base import INF, Decision, derive, micros, new_decision
from targets.algorithms.policy import WindowParams, require_positive


@dataclass(frozen=True)
class IdleParams:
    """A base model's params and how long a key's state outlives its last request."""

    base: Any
    idle_s: float
    idle_us: ClassVar[float]

    def __post_init__(self) -> None:
        require_positive(self, "idle_s")
        derive(self, idle_us=micros(self.idle_s))

_BUCKET, _BLOCK = get_algorithm("token_bucket"), get_algorithm("fixed_block")
"""Through the registry: the block model holds both blocking behaviours (its ``extend``)."""


def _us(now: float) -> float:
    return (now * 1e6 + 0.5) // 1.0


def _forgetful(base_decide: Callable[[Any, float, float, Any], tuple[Decision, Any]]):
    """A base model whose key state is dropped once ``idle_us`` passed since the key's last request
    (admitted or refused: a refused request touches the entry too)."""
    def decide(state: tuple[Any, float] | None, now: float, cost: float, p: IdleParams) -> tuple[Decision, Any]:
        t = _us(now)
        inner = None if state is None or t - state[1] >= p.idle_us else state[0]
        decision, inner = base_decide(inner, now, cost, p.base)
        return decision, (inner, t)
    return decide


def _counting_log(state: tuple[float, ...] | None, now: float, cost: float, p: WindowParams) -> tuple[Decision, Any]:
    """Every request in (t - W, t] counts, refused or not; admitted while they are at most L."""
    t = _us(now)
    kept = (*tuple(x for x in state or () if x > t - p.window_us), t)
    if len(kept) * cost <= p.limit:
        return new_decision(Decision, (True, p.limit - len(kept) * cost, 0.0, p.window_s, 0.0)), kept
    # refused: a request is admitted again once all but L - 1 of these slid out (if no more come)
    retry = (kept[len(kept) - int(p.limit // cost)] + p.window_us - t) / 1e6 if cost <= p.limit else INF
    return new_decision(Decision, (False, 0.0, max(0.0, retry), p.window_s, 0.0)), kept


@dataclass(frozen=True)
class StatefulModel:
    """One behaviour: its transition, how a policy (L, W, B) and its ``extra`` make its params,
    what its ``extra`` is, and its phrase."""

    name: str
    decide: Callable[[Any, float, float, Any], tuple[Decision, Any]]
    params: Callable[[Policy, float | None], Any]
    extra: str | None
    """``idle_s`` or ``block_s``; None: the model has no third parameter."""
    phrase: str
    release: None = None

    def build(self, policy: Policy, extra: float | None) -> Any:
        if self.extra is not None and not (extra is not None and extra > 0):
            raise PolicyError(f"{self.name}: {self.extra} must be a positive number, got {extra!r}")
        return self.params(policy, extra)


STATEFUL: dict[str, StatefulModel] = {m.name: m for m in (
    StatefulModel("forgetful_token_bucket", _forgetful(_BUCKET.decide),
                  lambda p, x: IdleParams(_BUCKET.params_from_policy(p), x), "idle_s",
                  "a token bucket of {B} refilled at {L} per {W} s, dropped after {X} s idle (recreated full)"),
    StatefulModel("forgetful_window", _forgetful(get_algorithm("limits_fixed_window").decide),
                  lambda p, x: IdleParams(WindowParams(p.limit, p.window_s), x), "idle_s",
                  "a counter of {L} per {W} s opened by each key's first request (refusals count), dropped after "
                  "{X} s idle (recreated empty)"),
    StatefulModel("fixed_block", _BLOCK.decide,
                  lambda p, x: _BLOCK.params_type(p.limit, p.window_s, x), "block_s",
                  "a sliding log of {L} in any {W} s that blocks a key for {X} s once it refuses it"),
    StatefulModel("extended_block", _BLOCK.decide,
                  lambda p, x: _BLOCK.params_type(p.limit, p.window_s, x, extend=True), "block_s",
                  "a sliding log of {L} in any {W} s that blocks a key until {X} s after its last refused request"),
    StatefulModel("counting_log", _counting_log, lambda p, x: WindowParams(p.limit, p.window_s), None,
                  "a sliding log of {L} in any {W} s in which refused requests count too"),
)}
"""The stateful behaviours, in the order ties are named."""
