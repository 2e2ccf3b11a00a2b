"""Failure behaviour: what a decision is when Redis fails or is slow.

Every primary call is bounded by ``timeout_s`` (default 50 ms; asyncio.wait_for, on top of the
client's socket timeouts). A Redis error or a timeout starts an *outage*:

- fail-open (a fallback store given, the default): the decision comes from a local limit, a
  MemoryStore with its own (configurable) params, typically the shared limit split over the N
  nodes; the decision is a ``FallbackDecision``;
- fail-closed (no fallback): the request is rejected with a ``FailClosedDecision``, Retry-After
  being the probe interval.

Both are plain Decisions (same fields, same indexes) whose class says where they came from:
``decision_source(d)`` gives "redis", "fallback" or "fail_closed" for the decision log.
During an outage the primary is not called on every request (that would add the timeout to
each one); one probe goes through every ``retry_s``, and the first that succeeds ends the outage
by itself, with no restart. One log line at the start of an outage and one at its end, never per
request; the counters (``errors``, ``outages``, ``degraded_decisions``, ``down``) are what the
target's /metrics reads.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

import redis

from ...algorithms.base import Decision
from ..memory import MemoryStore
from ..protocol import SharedStore

log = logging.getLogger("targets.stores.redis")


class FallbackDecision(Decision):
    """Decided by the local fallback limit while Redis was unavailable (fail-open)."""

    __slots__ = ()
    source = "fallback"


class FailClosedDecision(Decision):
    """Rejected because Redis was unavailable and the store fails closed."""

    __slots__ = ()
    source = "fail_closed"


def decision_source(decision: Decision) -> str:
    return getattr(decision, "source", "redis")


FAILURES = (redis.RedisError, OSError, asyncio.TimeoutError)


class AsyncStore(SharedStore, Protocol):
    """A shared store on a Redis client (the wrapper reconnects through it)."""

    client: Any


class FailoverStore:
    def __init__(self, primary: AsyncStore, fallback: MemoryStore | None, *, timeout_s: float = 0.05,
                 retry_s: float = 1.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.primary, self.fallback = primary, fallback
        self.timeout_s, self.retry_s, self._clock = timeout_s, retry_s, clock
        self.errors = 0
        """Primary calls that failed or timed out."""
        self.outages = 0
        self.degraded_decisions = 0
        """Decisions made without Redis (by the fallback, or rejected when failing closed)."""
        self._down_since: float | None = None
        self._next_probe = 0.0
        self._outage_decisions = 0

    @property
    def down(self) -> bool:
        return self._down_since is not None

    def metrics(self) -> dict[str, float]:
        return {"redis_errors": self.errors, "redis_outages": self.outages,
                "redis_degraded_decisions": self.degraded_decisions, "redis_down": float(self.down)}

    async def decide(self, key: str, now: float | None = None, cost: float = 1.0) -> Decision:
        if self._down_since is not None:
            t = self._clock()
            if t < self._next_probe:
                return self._degraded(key, now, cost)
            self._next_probe = t + self.retry_s  # one probe per interval, even under concurrency
        try:
            decision = await asyncio.wait_for(self.primary.decide(key, now, cost), self.timeout_s)
        except FAILURES as exc:
            self._failed(exc)
            return self._degraded(key, now, cost)
        if self._down_since is not None:
            self._recovered()
        return decision

    async def release(self, key: str, now: float | None = None, cost: float = 1.0) -> None:
        """Give back slots where they are counted now (a slot taken in Redis and released during
        an outage stays taken there: the concurrency count has no TTL, see docs/redis.md)."""
        if self._down_since is None:
            try:
                await asyncio.wait_for(self.primary.release(key, now, cost), self.timeout_s)
                return
            except FAILURES as exc:
                self._failed(exc)
        if self.fallback is not None:
            self.fallback.release(key, time.time() if now is None else now, cost)

    async def aclose(self) -> None:
        """Close the Redis client (at the target's shutdown)."""
        await self.primary.client.aclose()

    def _degraded(self, key: str, now: float | None, cost: float) -> Decision:
        self.degraded_decisions += 1
        self._outage_decisions += 1
        if self.fallback is None:
            return tuple.__new__(FailClosedDecision, (False, 0.0, self.retry_s, self.retry_s, 0.0))
        return tuple.__new__(FallbackDecision, self.fallback.decide(key, time.time() if now is None else now, cost))

    def _failed(self, exc: BaseException) -> None:
        self.errors += 1
        if self._down_since is None:
            self._down_since = self._clock()
            self._next_probe = self._down_since + self.retry_s
            self.outages += 1
            self._outage_decisions = 0
            action = "fail-open to the local fallback limit" if self.fallback is not None else "fail-closed (rejecting)"
            log.warning("redis store: outage started (%s: %s); %s, probing every %.2f s",
                        type(exc).__name__, exc or "timeout", action, self.retry_s)

    def _recovered(self) -> None:
        assert self._down_since is not None
        log.warning("redis store: outage ended after %.2f s; %d decisions made without Redis",
                    self._clock() - self._down_since, self._outage_decisions)
        self._down_since = None

