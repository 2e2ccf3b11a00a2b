"""The decisions a policy's limits would have made on a log's requests, made as the target's
layered check makes them (``targets/layers.py``), on compact columns.

- Limits on Redis (store modes ``shared``, ``leased``, ``naive``): each limit that covers the
  route decides and spends in turn (Redis has no peek, ``check_remote``): a request refused by
  one limit is not offered to the next, and the limits before it have spent its cost. Replayed
  limit after limit, each on the requests still standing.
- Limits in memory (mode ``local``: each node's own counters): every limit that covers the route
  is peeked, and all commit only when all admit (``check``), so a request refused by any limit
  spends nothing anywhere; a route that one limit covers takes the store's single ``decide`` (its
  state is stored even when it refuses, as ``MemoryStore.decide`` stores it). Where no route of
  the log is covered by two limits, each limit is replayed alone (the same decisions, one tight
  loop per limit); otherwise one loop asks the limits of each request together.
- ``local`` on N nodes: the balancer deals every request of the log round-robin, and all the
  limits of a request decide on its node's counters (a state per key and node).

Algorithm transitions are pure (``decide(state, now, cost, params)``), so a dict of states per
limit is the memory store's table without its lock, LRU order and sweeps, which cost as much
again as the decision and change nothing here (a state idle for the store's TTL starts afresh,
as the store's lookup treats it). Keys are integer codes: a store only hashes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from targets.algorithms import get_algorithm

from .sim import Deployment

REPLAY_BLOCK = 1 << 16
"""Requests turned into Python lists at a time: the loop's memory stays flat."""


def node_keys(codes: np.ndarray, nodes: int) -> np.ndarray:
    """Key codes made one per (key, node) for requests dealt round-robin to ``nodes`` nodes."""
    if nodes <= 1:
        return codes
    return codes.astype(np.int64) * nodes + np.arange(len(codes), dtype=np.int64) % nodes


@dataclass
class _Table:
    """One limit's states, as one memory store keeps them."""

    transition: Any
    params: Any
    ttl: float
    states: dict[int, tuple[Any, float]] = field(default_factory=dict)

    @classmethod
    def of(cls, dep: Deployment) -> _Table:
        algorithm = get_algorithm(dep.algorithm)
        return cls(algorithm.decide, dep.params, algorithm.state_ttl(dep.params))

    def ask(self, key: int, now: float, cost: float) -> tuple[bool, Any]:
        """The decision and the state it would leave (the store's ``peek``)."""
        entry = self.states.get(key)
        decision, state = self.transition(entry[0] if entry is not None and now - entry[1] < self.ttl else None,
                                          now, cost, self.params)
        return decision[0], state

    def keep(self, key: int, now: float, state: Any) -> None:
        """The store's ``commit`` (nothing kept when the algorithm's state never outlives a decision)."""
        if self.ttl > 0:
            self.states[key] = (state, now)


def replay_allowed(dep: Deployment, keys: np.ndarray, t: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """One limit's decisions on its requests in time order (``keys``: per node already, see
    ``node_keys``), as one bool each: the memory store's ``decide`` inlined, the per-request path
    of every replay."""
    table = _Table.of(dep)
    transition, params, ttl, states = table.transition, table.params, table.ttl, table.states
    keep, get = ttl > 0, states.get
    allowed = np.empty(len(t), dtype=bool)
    for first in range(0, len(t), REPLAY_BLOCK):
        last = first + REPLAY_BLOCK
        out: list[bool] = []
        append = out.append
        for key, now, c in zip(keys[first:last].tolist(), t[first:last].tolist(), cost[first:last].tolist()):
            entry = get(key)
            decision, state = transition(entry[0] if entry is not None and now - entry[1] < ttl else None, now, c, params)
            if keep:
                states[key] = (state, now)
            append(decision[0])
        allowed[first:last] = out
    return allowed


def in_turn(deps: list[Deployment], keys: list[np.ndarray], covered: list[np.ndarray], t: np.ndarray,
            cost: np.ndarray) -> np.ndarray:
    """Per request, the index of the limit that refused it (-1: admitted), the limits asked one
    after another on the requests still standing: Redis layers, or memory limits no request
    meets two of."""
    refused_by = np.full(len(t), -1, dtype=np.int16)
    for i, (dep, codes, mine) in enumerate(zip(deps, keys, covered)):
        idx = np.flatnonzero(mine & (refused_by < 0))
        allowed = replay_allowed(dep, codes[idx], t[idx], cost[idx])
        refused_by[idx[~allowed]] = i
    return refused_by


def together(deps: list[Deployment], keys: list[np.ndarray], covered: list[np.ndarray], t: np.ndarray,
             cost: np.ndarray) -> np.ndarray:
    """Per request, the index of the limit that refused it (-1: admitted), every memory limit of
    a request peeked in order and committed only when all admit (``targets.layers.check``)."""
    tables = [_Table.of(dep) for dep in deps]
    plans, plan_of = np.unique(np.stack(covered, axis=1), axis=0, return_inverse=True)
    plan_of = plan_of.reshape(-1)
    layers = [[(j, tables[j]) for j in np.flatnonzero(row).tolist()] for row in plans]
    idx = np.flatnonzero(np.any(plans, axis=1)[plan_of])
    refused_by = np.full(len(t), -1, dtype=np.int16)
    for first in range(0, len(idx), REPLAY_BLOCK):
        block = idx[first:first + REPLAY_BLOCK]
        per_limit = np.stack([codes[block] for codes in keys], axis=1).tolist()
        out = [_check(layers[p], ks, now, c)
               for p, ks, now, c in zip(plan_of[block].tolist(), per_limit, t[block].tolist(), cost[block].tolist())]
        refused_by[block] = out
    return refused_by


def _check(layers: list[tuple[int, _Table]], keys: list[int], now: float, cost: float) -> int:
    """One request's layered check: a single layer decides (and keeps its state, refused or
    not); several are peeked, the first refusal decides and nothing is kept anywhere."""
    if len(layers) == 1:
        j, table = layers[0]
        allowed, state = table.ask(keys[j], now, cost)
        table.keep(keys[j], now, state)
        return -1 if allowed else j
    pending = []
    for j, table in layers:
        allowed, state = table.ask(keys[j], now, cost)
        if not allowed:
            return j
        pending.append((table, keys[j], state))
    for table, key, state in pending:
        table.keep(key, now, state)
    return -1
