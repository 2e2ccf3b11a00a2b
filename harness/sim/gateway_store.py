"""A gateway's token bucket in front of a limiter, in virtual time, decided as the live target's
layered check decides its two limits (``targets.layers.check``: the gateway first, both peeked,
both committed only when both admit). So a request the bucket refuses never reaches the limiter
behind it (its in-flight count and latency samples are those of what the bucket let through),
and a request the limiter behind refuses spends no token. Each decision's refusing layer is kept
for the decision log's ``limit_name``, the column a live target writes it in.

A composition of two memory stores at the store level: the simulator's event loop sees one
store, whose algorithm (what it holds, observes and reads) is the limiter's behind the gateway.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.campaign.config_file import GATEWAY_ALGORITHM
from targets.algorithms import Decision, get_algorithm
from targets.stores.memory import MemoryStore

ADMITTED = -1


@dataclass(frozen=True)
class Gateway:
    """A run's gateway: its bucket's parameters (``token_bucket``'s) and the two layers' names."""

    bucket: Any
    names: tuple[str, str]

    def over(self, inner: MemoryStore) -> GatewayStore:
        """This gateway in front of ``inner``."""
        return GatewayStore(MemoryStore(get_algorithm(GATEWAY_ALGORITHM), self.bucket), inner, self.names)


class GatewayStore:
    """``front`` (the gateway's bucket) in front of ``inner``, the limiter under test; ``names``:
    the two layers' limit names, as the live target's config calls them."""

    def __init__(self, front: MemoryStore, inner: MemoryStore, names: tuple[str, str]) -> None:
        self.front, self.inner, self.names = front, inner, names
        self.algorithm = inner.algorithm
        self.params = inner.params
        self.refused_by = array("b")
        """Per decision, in order: the refusing layer (0 the gateway, 1 the limiter), or ADMITTED."""

    @property
    def evictions(self) -> int:
        return self.front.evictions + self.inner.evictions

    def decide(self, key: str, now: float, cost: float = 1.0) -> Decision:
        decision, front_state = self.front.peek(key, now, cost)
        if not decision[0]:
            self.refused_by.append(0)
            return decision
        decision, inner_state = self.inner.peek(key, now, cost)
        if not decision[0]:
            self.refused_by.append(1)
            return decision
        self.front.commit(key, now, front_state)
        self.inner.commit(key, now, inner_state)
        self.refused_by.append(ADMITTED)
        return decision

    def decide_many(self, keys: Sequence[str], times: Sequence[float], costs: Sequence[float]) -> list[Decision]:
        return [self.decide(k, t, c) for k, t, c in zip(keys, times, costs)]

    def release(self, key: str, now: float, cost: float = 1.0) -> None:
        self.inner.release(key, now, cost)

    def finish(self, key: str, now: float, cost: float, rtt_s: float, failed: bool = False) -> Any:
        """Completions reach the limiter behind only: a token bucket holds nothing."""
        return self.inner.finish(key, now, cost, rtt_s, failed)

    def observe_reading(self, now: float, reading: Any) -> Any:
        return self.inner.observe_reading(now, reading)

    def state(self, key: str) -> Any:
        """The limiter's state (its ``current_limit`` is the log's ``adaptive_limit``)."""
        return self.inner.state(key)

    def limit_names(self) -> list[str]:
        """Per decision, the limit the log names: the refusing layer's, else the limiter's (the
        innermost layer that admitted)."""
        gateway, inner = self.names
        return [gateway if r == 0 else inner for r in self.refused_by]
