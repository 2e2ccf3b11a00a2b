"""Per-key limiter state in process memory, bounded so that a key-rotation attack cannot grow it.

Two bounds:
- idle TTL: a key untouched for ``idle_ttl_s`` is dropped. The default is the algorithm's own
  state lifetime (after which the state is equivalent to a fresh one), so expiry never changes
  a decision; a shorter TTL trades accuracy for memory.
- ``max_keys``: beyond it the least recently used key goes first. That does forget state (the
  evicted key starts fresh), which is the price of a hard memory bound.

Entries live in an OrderedDict in last-use order, so both bounds are enforced at the front:
``max_keys`` on every insert, the TTL sweep every 64 decisions (amortised O(1), no background
thread). One lock makes it safe under threads; asyncio callers are safe as well because nothing
awaits while the state is held.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from ..algorithms.base import Algorithm, Decision

SWEEP_EVERY = 64  # decisions between TTL sweeps; a power of two (checked with a mask)


class MemoryStore:
    def __init__(
        self,
        algorithm: Algorithm,
        params: Any,
        *,
        max_keys: int = 100_000,
        idle_ttl_s: float | None = None,
    ) -> None:
        if max_keys < 1:
            raise ValueError(f"max_keys must be at least 1, got {max_keys}")
        ttl = algorithm.state_ttl(params) if idle_ttl_s is None else idle_ttl_s
        if not ttl >= 0:
            raise ValueError(f"idle_ttl_s must be >= 0, got {idle_ttl_s}")
        self.algorithm = algorithm
        self.params = params
        self.max_keys = max_keys
        self.idle_ttl_s = ttl
        self.evictions = 0
        """Keys dropped by the max_keys bound (state lost); TTL expiry is not counted."""
        # entry = [state, last_used]; mutated in place so a hit costs one lookup, no insert
        self._entries: OrderedDict[str, list[Any]] = OrderedDict()
        lock = threading.Lock()
        self._acquire, self._release = lock.acquire, lock.release
        self._decide = algorithm.decide
        self._calls = 0

    def __len__(self) -> int:
        return len(self._entries)

    def decide(self, key: str, now: float, cost: float = 1.0) -> Decision:
        """One decision for ``key`` at ``now`` (the caller's clock: wall or virtual)."""
        self._acquire()
        try:
            entries = self._entries
            entry = entries.get(key)
            if entry is not None:
                state = entry[0] if now - entry[1] < self.idle_ttl_s else None
                decision, entry[0] = self._decide(state, now, cost, self.params)
                entry[1] = now
                entries.move_to_end(key)
            else:
                decision, state = self._decide(None, now, cost, self.params)
                if self.idle_ttl_s > 0:
                    entries[key] = [state, now]
                    if len(entries) > self.max_keys:
                        entries.popitem(last=False)
                        self.evictions += 1
            self._calls += 1
            if not self._calls & (SWEEP_EVERY - 1):
                self._expire(now)
            return decision
        finally:
            self._release()

    def decide_many(self, keys: Sequence[str], times: Sequence[float], costs: Sequence[float]) -> list[Decision]:
        """The decisions for a batch of requests in time order, under one lock acquisition.

        Same semantics as calling ``decide`` for each; the simulator's hot loop, where the
        per-call lock and method lookups would cost more than the decisions themselves.
        """
        out: list[Decision] = []
        append, entries, decide, params = out.append, self._entries, self._decide, self.params
        get, to_end, ttl, keep = entries.get, entries.move_to_end, self.idle_ttl_s, self.idle_ttl_s > 0
        self._acquire()
        try:
            for key, now, cost in zip(keys, times, costs):
                entry = get(key)
                if entry is not None:
                    decision, entry[0] = decide(entry[0] if now - entry[1] < ttl else None, now, cost, params)
                    entry[1] = now
                    to_end(key)
                else:
                    decision, state = decide(None, now, cost, params)
                    if keep:
                        entries[key] = [state, now]
                        if len(entries) > self.max_keys:
                            entries.popitem(last=False)
                            self.evictions += 1
                append(decision)
            if out:
                self._expire(now)
            return out
        finally:
            self._release()

    def release(self, key: str, now: float, cost: float = 1.0) -> None:
        """Give back in-flight capacity (concurrency algorithms); unknown keys are ignored."""
        release = self.algorithm.release
        if release is None:
            return
        self._acquire()
        try:
            entry = self._entries.get(key)
            if entry is not None:
                entry[0] = release(entry[0], now, cost, self.params)
        finally:
            self._release()

    def state(self, key: str) -> Any:
        """The stored state of a key (None if absent); for tests and admin endpoints."""
        entry = self._entries.get(key)
        return None if entry is None else entry[0]

    def _expire(self, now: float) -> None:
        """Drop idle keys; they sit at the front because entries are kept in last-use order."""
        if math.isinf(self.idle_ttl_s):
            return
        entries, ttl = self._entries, self.idle_ttl_s
        while entries:
            oldest = next(iter(entries))
            if now - entries[oldest][1] < ttl:
                break
            del entries[oldest]
