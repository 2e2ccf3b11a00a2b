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

The log comes a block at a time (``harness/campaign/request_records.py``): the tables are made once
per policy and carried from one block to the next, so the decisions are those of one pass over
the whole log, and a replay's memory is its tables of states and one block.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from targets.algorithms import get_algorithm

from .sim import Deployment

REPLAY_BLOCK = 1 << 16
"""Requests turned into Python lists at a time: the loop's memory stays flat."""


@dataclass(frozen=True)
class Requests:
    """The log's requests as a policy sees them: times in order, each request's route code, and
    per route code its cost and which limits cover it (``covers[route, limit]``)."""

    t: np.ndarray
    route: np.ndarray
    route_cost: np.ndarray
    covers: np.ndarray

    def blocks(self, limit: int | None = None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(positions, their route codes) block by block: every request a limit covers, or
        (``limit`` None) every request some limit covers."""
        for first in range(0, len(self.t), REPLAY_BLOCK):
            route = self.route[first:first + REPLAY_BLOCK]
            mine = self.covers[route, limit] if limit is not None else self.covers[route].any(axis=1)
            picked = np.flatnonzero(mine)
            yield picked + first, route[picked]


@dataclass(frozen=True)
class Keyed:
    """One limit's key code per request, one per (key, node) when requests are dealt
    round-robin to ``nodes`` local nodes."""

    codes: np.ndarray
    nodes: int = 1
    first: int = 0
    """The log position of ``codes[0]``: the round-robin deal runs over the whole log."""

    def at(self, positions: np.ndarray) -> list[int]:
        codes = self.codes[positions]
        if self.nodes > 1:
            codes = codes.astype(np.int64) * self.nodes + (positions + self.first) % self.nodes
        return codes.tolist()


@dataclass
class Table:
    """One limit's states, as one memory store keeps them."""

    transition: Any
    params: Any
    ttl: float
    states: dict[int, tuple[Any, float]] = field(default_factory=dict)

    @classmethod
    def of(cls, dep: Deployment) -> Table:
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


def _allowed(table: Table, keys: list[int], times: list[float], costs: list[float]) -> list[bool]:
    """One limit's decisions on a block of its requests: the memory store's ``decide`` inlined,
    the per-request path of every replay."""
    transition, params, ttl, states = table.transition, table.params, table.ttl, table.states
    keep, get = ttl > 0, states.get
    out: list[bool] = []
    append = out.append
    for key, now, c in zip(keys, times, costs):
        entry = get(key)
        decision, state = transition(entry[0] if entry is not None and now - entry[1] < ttl else None, now, c, params)
        if keep:
            states[key] = (state, now)
        append(decision[0])
    return out


def in_turn(tables: list[Table], keys: list[Keyed], requests: Requests) -> np.ndarray:
    """Per request, the index of the limit that refused it (-1: admitted), the limits asked one
    after another on the requests still standing: Redis layers, or memory limits no request
    meets two of."""
    refused_by = np.full(len(requests.t), -1, dtype=np.int16)
    for i, (table, keyed) in enumerate(zip(tables, keys)):
        for positions, route in requests.blocks(i):
            standing = refused_by[positions] < 0
            positions, route = positions[standing], route[standing]
            allowed = _allowed(table, keyed.at(positions), requests.t[positions].tolist(),
                               requests.route_cost[route].tolist())
            refused_by[positions[~np.array(allowed, dtype=bool)]] = i
    return refused_by


def together(tables: list[Table], keys: list[Keyed], requests: Requests) -> np.ndarray:
    """Per request, the index of the limit that refused it (-1: admitted), every memory limit of
    a request peeked in order and committed only when all admit (``targets.layers.check``)."""
    layers = [[(j, tables[j]) for j in np.flatnonzero(row).tolist()] for row in requests.covers]
    refused_by = np.full(len(requests.t), -1, dtype=np.int16)
    for positions, route in requests.blocks():
        per_limit = zip(*(keyed.at(positions) for keyed in keys))
        refused_by[positions] = [_check(layers[r], ks, now, c) for r, ks, now, c in zip(
            route.tolist(), per_limit, requests.t[positions].tolist(), requests.route_cost[route].tolist())]
    return refused_by


def _check(layers: list[tuple[int, Table]], keys: tuple[int, ...], now: float, cost: float) -> int:
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
