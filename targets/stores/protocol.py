"""What a store is, for those who call one (after limits' ``storage/base.py``): ``decide`` and
``release`` for a key, given the algorithm and its parameters, keeping the state.

Two families: a ``Store`` decides on the caller's clock and answers at once (the memory store,
the sync Redis store, the simulator's cluster of nodes); a ``SharedStore`` decides on the shared
store's own clock (``now=None``: Redis server time) and is awaited (the Redis store in every mode,
and the fail-open/fail-closed wrapper around it). ``ReplayStore`` is what the simulator replays a
model through: a Store that also batches open-loop decisions and counts evicted keys.
Optional capabilities are declared here as mixin protocols (as limits' ``MovingWindowSupport``),
never found by ``getattr``: ``LearningStore`` (an algorithm that learns from outcomes and machine
readings: the adaptive limits) and ``InspectableStore`` (a key's state readable, for the logged
limit of a moving limit).
Which algorithms a shared store runs: ``targets.stores.redis.SUFFIXES`` (one Lua script each).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from ..algorithms import Algorithm, Decision


@runtime_checkable
class Store(Protocol):
    algorithm: Algorithm
    params: Any

    def decide(self, key: str, now: float, cost: float = 1.0) -> Decision: ...
    def release(self, key: str, now: float, cost: float = 1.0) -> None: ...


@runtime_checkable
class ReplayStore(Store, Protocol):
    @property
    def evictions(self) -> int: ...
    def decide_many(self, keys: Sequence[str], times: Sequence[float], costs: Sequence[float]) -> list[Decision]: ...


@runtime_checkable
class LearningStore(Protocol):
    def finish(self, key: str, now: float, cost: float, rtt_s: float, failed: bool = False) -> Any: ...
    def observe_reading(self, now: float, reading: Any) -> Any: ...


@runtime_checkable
class InspectableStore(Protocol):
    def state(self, key: str) -> Any: ...


@runtime_checkable
class SharedStore(Protocol):
    async def decide(self, key: str, now: float | None = None, cost: float = 1.0) -> Decision: ...
    async def release(self, key: str, now: float | None = None, cost: float = 1.0) -> None: ...
