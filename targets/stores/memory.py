"""Per-key limiter state in process memory, bounded so that a key-rotation attack cannot grow it.

Two bounds:
- idle TTL: a key untouched for ``idle_ttl_s`` is dropped. The default is the algorithm's own
  state lifetime (after which the state is equivalent to a fresh one), so expiry never changes
  a decision; a shorter TTL trades accuracy for memory.
- ``max_keys``: beyond it one key is evicted, chosen by what forgetting it gives back, not by
  recency. A key's *debt* is the quota a fresh key has and its state has not, at that moment
  (a fresh key's ``remaining`` minus the state's, both from a zero-cost decision: the bucket's
  missing tokens, the window's count), 0 once it is at rest (a full bucket, an expired window: forgetting it
  changes nothing). Of the ``EVICTION_SAMPLE`` least recently used keys, the first at rest
  goes, else the one with the least debt; sampled keys still in debt move to the back, so the
  next eviction looks at others (a sampling pool, as Redis's eviction). LRU forgot exactly the
  keys that matter: a client in debt that pauses between bursts is the least recently used,
  and a flood of new keys reset its quota at every pause. Now a flood can only get a key
  forgotten when every key sampled with it owes at least as much: to have a debt D forgiven,
  the flood must itself be admitted about D per key it keeps in the table (docs/targets.md).

Entries live in an OrderedDict in last-use order, so both bounds are enforced at the front:
``max_keys`` on every insert, the TTL sweep every 64 decisions (amortised O(1), no background
thread; a key moved back by an eviction is swept when it reaches the front again). One lock
makes it safe under threads; asyncio callers are safe as well because nothing awaits while the
state is held.
"""

from __future__ import annotations

import itertools
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from ..algorithms.base import Algorithm, Decision

SWEEP_EVERY = 64  # decisions between TTL sweeps; a power of two (checked with a mask)
EVICTION_SAMPLE = 5
"""Least recently used keys an eviction compares (as Redis's maxmemory-samples default): more
rank better and cost more per new key once the table is full (~1.5 us each)."""
AT_REST = 0.0


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
        """Keys dropped by the max_keys bound; TTL expiry is not counted."""
        self.forgiven = 0.0
        """Debt given back by evictions, in cost units (0 while only keys at rest were evicted)."""
        self._fresh = algorithm.decide(None, 0.0, 0.0, params)[0][1]
        """What a fresh key still admits (a full bucket, an empty window)."""
        # entry = [state, last_used]; mutated in place so a hit costs one lookup, no insert
        self._entries: OrderedDict[str, list[Any]] = OrderedDict()
        self._lock = threading.Lock()
        self._commits = 0  # commit() calls, for its TTL sweep cadence
        self._reading: Any = None
        """The latest CPU/load reading (``observe_reading`` algorithms), one for the whole store."""
        self._transition = self._reading_transition() if algorithm.observe_reading is not None else algorithm.decide
        self.decide_many: Callable[[Sequence[str], Sequence[float], Sequence[float]], list[Decision]] = (
            self._make_decide_many())
        """``decide_many(keys, times, costs)``: the decisions for a batch of requests in time order
        (the simulator's loop), as ``decide`` one by one would give them."""
        self.decide: Callable[[str, float, float], Decision] = self._make_decide()
        """``decide(key, now, cost=1.0)``: one decision for ``key`` at ``now`` (the caller's
        clock, wall or virtual)."""

    def __len__(self) -> int:
        return len(self._entries)

    def _hot_names(self) -> tuple[Any, ...]:
        """What both hot paths close over, as local names."""
        entries = self._entries
        return (entries, entries.get, entries.move_to_end, self._evict, self._expire, self._transition, self.params,
                self.idle_ttl_s, self.max_keys, self.idle_ttl_s > 0)

    def _make_decide(self) -> Callable[..., Decision]:
        """The per-request path as a closure over local names: on this hot path, attribute
        lookups on ``self`` would cost as much as a whole fixed-window decision."""
        entries, get, to_end, evict, expire, transition, params, ttl, max_keys, keep = self._hot_names()
        acquire, release = self._lock.acquire, self._lock.release
        calls = 0

        def decide(key: str, now: float, cost: float = 1.0) -> Decision:
            nonlocal calls
            acquire()
            try:
                entry = get(key)
                if entry is not None:
                    decision, entry[0] = transition(entry[0] if now - entry[1] < ttl else None, now, cost, params)
                    entry[1] = now
                    to_end(key)
                else:
                    decision, state = transition(None, now, cost, params)
                    if keep:
                        entries[key] = [state, now]
                        if len(entries) > max_keys:
                            evict(now, key)
                calls += 1
                if not calls & (SWEEP_EVERY - 1):
                    expire(now)
                return decision
            finally:
                release()

        return decide

    def _make_decide_many(self) -> Callable[..., list[Decision]]:
        """``decide``'s steps over a batch under one lock, with a sweep cadence of its own (a
        sweep only frees memory: expiring a key never changes a decision)."""
        entries, get, to_end, evict, expire, transition, params, ttl, max_keys, keep = self._hot_names()
        lock = self._lock
        calls = 0

        def decide_many(keys: Sequence[str], times: Sequence[float], costs: Sequence[float]) -> list[Decision]:
            # decide's steps written out again, not called: a call and a lock per request were a
            # fifth of a replay's time (1.8 s -> 1.4 s for 1.6 million decisions on one key);
            # tests/targets/stores/test_memory_store.py holds the two to the same decisions
            nonlocal calls
            out: list[Decision] = []
            append = out.append
            with lock:
                for key, now, cost in zip(keys, times, costs):
                    entry = get(key)
                    if entry is not None:
                        decision, entry[0] = transition(entry[0] if now - entry[1] < ttl else None, now, cost, params)
                        entry[1] = now
                        to_end(key)
                    else:
                        decision, state = transition(None, now, cost, params)
                        if keep:
                            entries[key] = [state, now]
                            if len(entries) > max_keys:
                                evict(now, key)
                    calls += 1
                    if not calls & (SWEEP_EVERY - 1):
                        expire(now)
                    append(decision)
            return out

        return decide_many

    def release(self, key: str, now: float, cost: float = 1.0) -> None:
        """Give back in-flight capacity (concurrency algorithms); unknown keys are ignored."""
        release = self.algorithm.release
        if release is None:
            return
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                entry[0] = release(entry[0], now, cost, self.params)

    def finish(self, key: str, now: float, cost: float, rtt_s: float, failed: bool = False) -> Any:
        """After an admitted request completed: its latency sample (``observe``; ``failed``: it
        answered 503), then its slot given back (``release``), under one lock and one lookup (the
        per-request path of the concurrency and adaptive targets). Returns the key's state, None
        for an unknown key."""
        observe, release = self.algorithm.observe, self.algorithm.release
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if observe is not None:
                entry[0] = observe(entry[0], now, rtt_s, self.params, failed=failed)
            if release is not None:
                entry[0] = release(entry[0], now, cost, self.params)
            return entry[0]

    def _reading_transition(self) -> Callable[[Any, float, float, Any], tuple[Decision, Any]]:
        """``decide`` with the store's latest reading folded into the key's state first. A
        reading only replaces the CPU/load a rule keeps, so folding the latest at the key's next
        decision decides as folding every reading into every key at once would, at O(1) a push
        instead of O(keys) under the lock."""
        observe, decide = self.algorithm.observe_reading, self.algorithm.decide

        def transition(state: Any, now: float, cost: float, params: Any) -> tuple[Decision, Any]:
            reading = self._reading
            if reading is not None:
                state = observe(state, now, reading, params)
            return decide(state, now, cost, params)

        return transition

    def observe_reading(self, now: float, reading: Any) -> Any:
        """Keep one CPU/load reading for every key (``observe_reading`` algorithms; a background
        sampler calls it, off the per-request path): each key folds it in at its next decision.
        Returns the state of the most recently used key with the reading folded in (what the
        layer shows as its limit), None when there is none."""
        observe = self.algorithm.observe_reading
        if observe is None:
            return None
        with self._lock:
            self._reading = reading
            if not self._entries:
                return None
            return observe(next(reversed(self._entries.values()))[0], now, reading, self.params)

    def peek(self, key: str, now: float, cost: float = 1.0) -> tuple[Decision, Any]:
        """The decision and the state it would leave, storing nothing. Layered limits peek at
        every layer and ``commit`` only when all admit, so a rejected request consumes no quota
        anywhere. Callers on one event loop get peek + commit atomically (nothing awaits between)."""
        with self._lock:
            entry = self._entries.get(key)
            state = entry[0] if entry is not None and now - entry[1] < self.idle_ttl_s else None
            return self._transition(state, now, cost, self.params)

    def commit(self, key: str, now: float, state: Any) -> None:
        """Store a state that ``peek`` returned, under the same bounds as ``decide``."""
        with self._lock:
            entries = self._entries
            entry = entries.get(key)
            if entry is not None:
                entry[0], entry[1] = state, now
                entries.move_to_end(key)
            elif self.idle_ttl_s > 0:
                entries[key] = [state, now]
                if len(entries) > self.max_keys:
                    self._evict(now, key)
            self._commits += 1
            if not self._commits & (SWEEP_EVERY - 1):
                self._expire(now)

    def debt(self, state: Any, now: float) -> float:
        """The quota a fresh key has and ``state`` has not at ``now`` (0: at rest), from a
        zero-cost decision: every algorithm already says what it still admits."""
        return self._fresh - self.algorithm.decide(state, now, 0.0, self.params)[0][1]

    def _evict(self, now: float, keep: str) -> None:
        """Drop one key (not ``keep``, the one just stored): the first sampled key at rest, else
        the sampled key with the least debt."""
        entries, decide, params, fresh, ttl = self._entries, self.algorithm.decide, self.params, self._fresh, self.idle_ttl_s
        chosen, least, in_debt = None, math.inf, []
        for key, entry in itertools.islice(entries.items(), EVICTION_SAMPLE + 1):
            if key == keep:
                continue
            # self.debt inlined (this runs for every new key once the table is full); idle past the TTL: fresh
            owed = fresh - decide(entry[0], now, 0.0, params)[0][1] if now - entry[1] < ttl else AT_REST
            if owed <= AT_REST:
                chosen, least = key, owed
                break
            if owed < least:
                chosen, least = key, owed
            in_debt.append(key)
        for key in in_debt:
            if key != chosen:
                entries.move_to_end(key)
        if chosen is not None:
            del entries[chosen]
            self.evictions += 1
            if least > AT_REST:
                self.forgiven += least

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
