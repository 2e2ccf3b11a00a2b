"""Several target nodes behind one balancer: which node each request reaches.

A model that runs on a fleet (``multi_node``) describes it with a ``Fleet``: when each node
starts taking traffic (a node joining mid-run is an autoscale event) and how the balancer
routes. ``assign_nodes`` is the balancer, pure and deterministic, so the live plan (Locust picks
the host) and the simulator (N memory stores in virtual time) deal requests identically.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from contract.stores import VirtualStore

Routing = Literal["round_robin", "sticky"]
ROUTINGS: tuple[str, ...] = get_args(Routing)
"""round_robin: each request to the next active node; sticky: a client always to the node its
id hashes to (crc32 mod the active nodes, so a join moves some clients, as a plain hash does)."""
VIRTUAL_STORES: tuple[str, ...] = get_args(VirtualStore)
"""How ``simulate`` deploys the limit on the fleet: each node alone with L, each with L/N, or one
shared state (live runs take the store from the campaign instead)."""


@dataclass(frozen=True)
class Fleet:
    joins_s: tuple[float, ...]
    """Per node: the model time from which it takes traffic (0 for the initial nodes)."""
    routing: str = "round_robin"
    virtual_store: str = "shared"

    @property
    def nodes(self) -> int:
        return len(self.joins_s)


def assign_nodes(times: Sequence[float], client_ids: Sequence[str], fleet: Fleet) -> list[int]:
    """The node index of every request (arrivals in time order)."""
    joins = sorted(range(fleet.nodes), key=lambda i: fleet.joins_s[i])
    sticky = fleet.routing == "sticky"
    out: list[int] = []
    active = 0
    for n, (t, client) in enumerate(zip(times, client_ids)):
        while active < len(joins) and fleet.joins_s[joins[active]] <= t:
            active += 1
        live = max(1, active)
        slot = zlib.crc32(client.encode()) % live if sticky else n % live
        out.append(joins[slot])
    return out
