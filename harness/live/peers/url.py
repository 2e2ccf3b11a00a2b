"""A url peer's run (harness/campaign/peers/url.py): a ``LivePeer`` whose side starts nothing and
reads nothing of its own.
Its decisions are inferred from the client log, joined with the plan by request id: a status the
user named as a refusal (429 by default) is a rejection, the time is the client's send time, the
key is the one the peer declares its limiter counts by (its client's source address, or a header's
value) and every row says ``source: client``. The uncertainty of that time is the request's round trip
(the endpoint decided somewhere between send and answer): run.json records its percentiles.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from contract.folder import write_parquet
from contract.schema import CLIENT_FILE, DECIDED_BY_CLIENT, DECISIONS_FILE, HANDSHAKE_DIR, ROLE_PLAN
from harness.campaign.peers.url import UrlPeer
from harness.processes.target import TargetProcess
from scenarios.base import Arrivals, Request
from scenarios.live_plan import LivePlan, origin_of, request_headers

from ..logs import gather_client
from ..measures import pct_ms
from ..sides.base import Side, SideSetup
from .base import LivePeer, peer_decisions

UNPLANNED = "unplanned"
"""The key of an answer the plan knows nothing of, not even as a follow-up of a planned request."""
NO_KEY = "(none)"
"""The key of a request that did not carry the header the endpoint's limiter keys on."""


def request_key(key: str | None, request: Request | None, rid: str, address: str | None, key_prefix: str = "") -> str:
    """The key the endpoint's limiter counted a request by, as the peer declares it (``key``):
    ``ip``, its source address; ``header:NAME``, that header's value (an API key after the run's
    ``key_prefix``); undeclared, as the suite's targets key (the API key, else the source address)."""
    if request is None:
        return UNPLANNED
    if key == "ip":
        return f"ip:{address}"
    headers = request_headers(request, rid, key_prefix)
    if key is not None:
        return headers.get(key.partition(":")[2].lower(), NO_KEY)
    return (key_prefix + request.key if request.key else None) or headers.get("x-api-key") or f"ip:{address}"


def client_decisions(client: pa.Table, arrivals: Arrivals, peer: UrlPeer, key_prefix: str = "") -> pa.Table:
    """DECISION_SCHEMA rows from the client log: one per answered attempt of the plan, in
    send-time order (unanswered attempts decided nothing the client could see; the suite's own
    requests are not the plan's). Keyed by the key the peer declares its limiter uses."""
    df = client.to_pandas()
    df = df[(df["status"] > 0) & (df["role"] == ROLE_PLAN)]
    planned = {f"r{i}": r for i, r in enumerate(arrivals.requests())}  # scenarios.live_plan's request ids
    refused, declared = set(peer.entry.reject_status), peer.entry.key
    rows = []
    for rid, sent, status, address in zip(df["request_id"], df["sent_t"], df["status"], df["client_address"]):
        r = planned.get(origin_of(rid))  # a follow-up keeps its origin's key, class and client
        rows.append({
            "t": float(sent), "node": "node-1", "algorithm": peer.name, "store": peer.store, "limit_name": "per-client",
            "key": request_key(declared, r, origin_of(rid), address, key_prefix), "cost": 1.0 if r is None else float(r.cost),
            "allowed": int(status) not in refused, "client_class": None if r is None else r.client_class,
            "request_id": rid, "client_id": None if r is None else r.client_id, "route": None if r is None else r.route,
            "source": "client",
        })
    return peer_decisions(rows)


def round_trip_ms(client: pa.Table) -> dict[str, Any]:
    """The answered requests' round trip (done - sent): how uncertain a client-side decision time is."""
    df = client.to_pandas()
    rt = (df["done_t"] - df["sent_t"])[df["status"] > 0].to_numpy(dtype=np.float64)
    return {name: pct_ms(rt, q) for name, q in (("p50", 50), ("p99", 99), ("max", 100))}


class UrlLivePeer(LivePeer):
    """An endpoint the user runs, as a run's side: built from its campaign entry (``spec``)."""

    def __init__(self, spec: UrlPeer) -> None:
        self.spec: UrlPeer = spec

    @property
    def refused(self) -> frozenset[int]:
        return frozenset(self.spec.entry.reject_status)

    def side(self, setup: SideSetup) -> Side:
        return UrlSide(self, setup)


class UrlSide(Side):
    """The load goes to the user's URL; its decisions come from the client log, uncertain by
    each request's round trip (it keeps no arrival times for us: no landing measures)."""

    outlives_run = True

    def __init__(self, live: UrlLivePeer, setup: SideSetup) -> None:
        super().__init__(setup)
        self.live = live

    def hosts(self) -> list[str]:
        return [self.live.spec.url]

    def start(self) -> list[tuple[str, TargetProcess]]:
        return []

    def response(self) -> dict[str, Any] | None:
        """Its refusal; no fix offered: its config is the user's."""
        return self.live.response(self.live.spec.url, self.setup.run.policy, self.setup.run_dir / HANDSHAKE_DIR)

    def results(self, plan: LivePlan) -> dict[str, Any]:
        run_dir = self.setup.run_dir
        measured = gather_client(run_dir, plan, landing=False)
        client = pq.read_table(run_dir / CLIENT_FILE)
        write_parquet(run_dir / DECISIONS_FILE, client_decisions(client, plan.arrivals(), self.live.spec, plan.key_prefix))
        return {**measured, "decided_from": DECIDED_BY_CLIENT, "round_trip_ms": round_trip_ms(client),
                "keyed_by": self.live.spec.entry.key}
