"""N independent memory stores behind a balancer, in virtual time: local limits on N nodes.

It has the store interface the simulator's replay loops use (``decide``, ``decide_many``,
``release``, ``algorithm``, ``params``, ``evictions``). Requests are dealt round-robin, or by a
precomputed node per request (``scenarios.fleet.assign_nodes``: sticky routing, nodes joining
mid-run), consumed in replay order.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

from targets.algorithms import Algorithm, Decision
from targets.stores.memory import MemoryStore


class ClusterStore:
    """A ReplayStore (targets.stores.protocol) of N memory stores, one per node."""

    def __init__(self, algorithm: Algorithm, params: Any, nodes: int, assignment: Sequence[int] | None = None) -> None:
        self.algorithm, self.params = algorithm, params
        self.stores = [MemoryStore(algorithm, params, max_keys=1_000_000) for _ in range(nodes)]
        self.assignment = assignment
        self._held: dict[str, deque[int]] = {}
        self._next = 0
        """Round-robin: the next node; with an assignment: the next request's index in it."""

    @property
    def evictions(self) -> int:
        return sum(s.evictions for s in self.stores)

    def _node(self) -> int:
        i = self._next
        self._next += 1
        if self.assignment is not None:
            return self.assignment[i]
        self._next %= len(self.stores)
        return i

    def decide(self, key: str, now: float, cost: float = 1.0) -> Decision:
        node = self._node()
        decision = self.stores[node].decide(key, now, cost)
        if decision[0] and self.algorithm.release is not None:
            self._held.setdefault(key, deque()).append(node)
        return decision

    def release(self, key: str, now: float, cost: float = 1.0) -> None:
        """Give the slot back on the node that took it (a key's holds end in admission order:
        the simulator holds every slot for the same time)."""
        held = self._held.get(key)
        if held:
            self.stores[held.popleft()].release(key, now, cost)

    def decide_many(self, keys: list[str], times: list[float], costs: list[float]) -> list[Decision]:
        """Deal the batch; each node decides its share in order (nodes are independent)."""
        if len(self.stores) == 1:
            self._next += len(keys) if self.assignment is not None else 0
            return self.stores[0].decide_many(keys, times, costs)
        nodes = [self._node() for _ in keys]
        out: list[Decision] = [None] * len(keys)  # type: ignore[list-item]
        for node, store in enumerate(self.stores):
            idx = [i for i, n in enumerate(nodes) if n == node]
            for i, d in zip(idx, store.decide_many([keys[i] for i in idx], [times[i] for i in idx], [costs[i] for i in idx])):
                out[i] = d
        return out
