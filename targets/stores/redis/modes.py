"""How N target nodes share a limit, besides ``shared`` (every decision in Redis: store.py).

- ``local``: each node decides alone on its own MemoryStore. With the unscaled limit the N nodes
  admit up to N x L together; ``local_params(params, n)`` gives each node L/N instead (exact
  only when the load is spread evenly over the nodes).
- ``leased``: a node takes a batch of tokens from Redis in one script call (the algorithm's own
  script with ``want = batch``: it grants the largest whole amount up to the batch that fits,
  at least the request's cost) and spends them locally, so round trips ≈ 1/batch. Costs:
  tokens leased but unspent when their lease expires (``lease_ttl_s``) are lost (under-admits),
  and tokens spent up to ``lease_ttl_s`` after being taken can exceed a windowed limit by at most
  N x batch (over-admits). A rejected lease is remembered until its retry-after, so a flood of
  rejected requests costs no round trips either.
- ``naive``: INCRBY then EXPIRE in two calls, the pattern the Lua scripts exist to avoid. It is
  kept on purpose: a node that dies (``crash_hook``) between the two leaves a counter without
  TTL, and the client is locked out forever.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import time
from collections.abc import Callable
from typing import Any

from ...algorithms.base import INF, Decision, new_decision
from .store import AsyncRedisStore

SWEEP_EVERY = 4096  # decisions between sweeps of expired leases
_DIVIDE = ("limit", "capacity", "rate", "burst", "max_in_flight")
_MULTIPLY = ("interval_s",)


def local_params(params: Any, nodes: int) -> Any:
    """The params of one of ``nodes`` nodes that split a shared limit evenly (quota and rate / N)."""
    if nodes < 1:
        raise ValueError(f"nodes must be at least 1, got {nodes}")
    names = {f.name for f in dataclasses.fields(params)}
    changes = {n: getattr(params, n) / nodes for n in _DIVIDE if n in names}
    changes |= {n: getattr(params, n) * nodes for n in _MULTIPLY if n in names}
    return dataclasses.replace(params, **changes)


class LeasedStore:
    def __init__(self, remote: AsyncRedisStore, *, batch: int = 100, lease_ttl_s: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if batch < 1:
            raise ValueError(f"batch must be at least 1, got {batch}")
        self.remote, self.batch, self.lease_ttl_s, self._clock = remote, batch, lease_ttl_s, clock
        self.decisions = 0
        self._leases: dict[str, list[float]] = {}  # key -> [tokens left, lease expiry]
        self._blocked: dict[str, tuple[float, float, Decision]] = {}  # key -> (until, cost, rejection)
        self._pending: dict[str, asyncio.Future[None]] = {}  # one lease call in flight per key

    @property
    def calls(self) -> int:
        return self.remote.calls

    @property
    def client(self) -> Any:
        return self.remote.client

    async def decide(self, key: str, now: float | None = None, cost: float = 1.0) -> Decision:
        """``now`` (injected time) also clocks the leases; else the node's monotonic clock."""
        self.decisions += 1
        if not self.decisions % SWEEP_EVERY:
            self._sweep(self._clock() if now is None else now)
        while True:
            t = self._clock() if now is None else now
            lease = self._leases.get(key)
            if lease is not None and lease[1] > t and lease[0] >= cost:
                lease[0] -= cost
                return new_decision(Decision, (True, lease[0], 0.0, lease[1] - t, 0.0))
            blocked = self._blocked.get(key)
            if blocked is not None and t < blocked[0] and cost >= blocked[1]:
                return new_decision(Decision, (False, 0.0, blocked[0] - t, blocked[2][3], 0.0))
            pending = self._pending.get(key)
            if pending is None:
                return await self._lease(key, now, cost, t)
            await asyncio.shield(pending)  # another request is leasing: try its tokens first

    async def _lease(self, key: str, now: float | None, cost: float, t: float) -> Decision:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending[key] = done
        try:
            decision, granted = await self.remote.lease(key, now, cost, max(cost, self.batch))
        finally:
            del self._pending[key]
            done.set_result(None)
        if decision.allowed:
            self._blocked.pop(key, None)
            self._leases[key] = [granted - cost, t + self.lease_ttl_s]
        elif decision.retry_after_s < INF:
            self._blocked[key] = (t + decision.retry_after_s, cost, decision)
        return decision

    async def release(self, key: str, now: float | None = None, cost: float = 1.0) -> None:
        await self.remote.release(key, now, cost)

    def _sweep(self, t: float) -> None:
        """Drop expired leases and rejections, so that rotating keys cannot grow the dicts."""
        for key in [k for k, lease in self._leases.items() if lease[1] <= t]:
            del self._leases[key]
        for key in [k for k, blocked in self._blocked.items() if blocked[0] <= t]:
            del self._blocked[key]


class NaiveStore:
    """A fixed window of ``limit`` per ``window_s`` from INCRBY then EXPIRE (two round trips)."""

    def __init__(self, client: Any, limit: float, window_s: float, *, namespace: str = "naive",
                 crash_hook: Callable[[], None] | None = None) -> None:
        self.client, self.limit, self.window_s = client, limit, window_s
        self.namespace, self.crash_hook = namespace, crash_hook
        self.calls = 0

    def key(self, key: str) -> str:
        return f"{self.namespace}:{{{key}}}"

    async def decide(self, key: str, now: float | None = None, cost: float = 1.0) -> Decision:
        """``now`` is ignored: the window is the key's server-side TTL."""
        k = self.key(key)
        self.calls += 1
        count = await self.client.incrby(k, math.ceil(cost))
        if count == math.ceil(cost):  # first request of a window: start its TTL
            if self.crash_hook is not None:
                self.crash_hook()  # the node dies here: the counter never gets its TTL
            self.calls += 1
            await self.client.expire(k, math.ceil(self.window_s))
        remaining = max(0.0, self.limit - count)
        if count <= self.limit:
            return new_decision(Decision, (True, remaining, 0.0, self.window_s, 0.0))
        return new_decision(Decision, (False, remaining, self.window_s, self.window_s, 0.0))

    async def release(self, key: str, now: float | None = None, cost: float = 1.0) -> None:
        return None
