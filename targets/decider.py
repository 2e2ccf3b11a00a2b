"""One request's rate-limit decision and what it tells the client, shared by the two places that
make it: the HTTP protocol, as soon as a request's head is parsed (targets/early_refusal.py: a
refusal then never enters uvicorn's request cycle), and the ASGI middleware for the requests the
protocol leaves to it (Redis layers, a login's account read from its body, pipelined requests).

A request is decided once: the protocol puts what it decided for an admitted request in the scope
(``DECIDED``) and the middleware goes on from there. Both log the same row and count the same
metrics (``record``), and both answer a refusal with ``refusal``'s headers and body, and a
request that names its key twice with ``bad_request``'s 400, deciding nothing.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence
from typing import Any

from .algorithms.base import decided_at
from .arrival import ARRIVED
from .decision_log import DecisionLog
from .headers import Header, QuotaText, limit_headers, never_admitted, quota_headers, rejection, repeated_key
from .keys import Identity, KeyPolicy
from .layers import NEVER_LIMITED, UNROUTED, Applied, RoutePlan, Verdict, check
from .metrics import Metrics

DECIDED = "ratelimit_bench.decided"
"""The scope key (an ASGI extension key of this project) holding the ``(plan, verdict)`` the
protocol decided and logged for an admitted request: the middleware decides nothing again."""


class Decider:
    """The limits of one app: which plan a request falls under, the decision and its log row."""

    def __init__(self, routes: dict[tuple[str, str], RoutePlan], keys: KeyPolicy, log: DecisionLog | None,
                 metrics: Metrics, node: str, store: str, process: int | None = None) -> None:
        self.routes = routes
        self.keys = keys
        self.log = log
        self.metrics = metrics
        self.node = node
        self.store = store
        self._seq = itertools.count(1)
        self._id_prefix = node if process is None else f"{node}.p{process}"
        """Request ids the target makes up: a node's processes never make the same one."""

    def plan(self, method: str, path: str) -> RoutePlan | None:
        """The limits a request is counted against; None: it is never limited. A HEAD of a GET
        route is that route's; any other request no route serves is ``UNROUTED``'s."""
        routes = self.routes
        plan = routes.get((method, path))
        if plan is None and path not in NEVER_LIMITED:
            plan = (routes.get(("GET", path)) if method == "HEAD" else None) or routes.get(UNROUTED)
        return plan if plan is not None and plan.layers else None

    def decide(self, plan: RoutePlan, who: Identity, scope: dict[str, Any]) -> Verdict:
        """Decide a plan of memory layers that needs no body (``early``) now, and log it."""
        now = decided_at(time.time())  # the whole µs the algorithms decide at
        verdict = check(plan, who, now)
        self.record(plan, who, verdict, now, scope.get(ARRIVED))
        return verdict

    def record(self, plan: RoutePlan, who: Identity, verdict: Verdict, now: float, arrived: float | None) -> None:
        """One decision-log row and the metrics, per layer that decided."""
        rows = self.log.rows if self.log is not None else None
        request_id = who.request_id or f"{self._id_prefix}-{next(self._seq)}"
        for a in verdict.applied:
            d = a.decision
            name = a.layer.name
            self.metrics.decided[name].inc()
            if not d[0]:
                self.metrics.rejected[name].inc()
            source = a.variant.source_of(d)
            if a.variant.remote:
                self.metrics.sourced[name, source].inc()
            if rows is not None:
                rows.append((now, self.node, a.layer.algorithm.name, self.store, name, a.key, plan.cost, d[0], d[1],
                             d[2], a.decision_us, who.client_class, request_id, who.client_id, plan.name, d[4], None,
                             source, a.layer.current_limit if a.layer.observes else None, arrived))


def bad_request(who: Identity) -> tuple[Sequence[Header], bytes] | None:
    """The 400 a limited request gets instead of a decision, or None: it names its key twice
    (``Identity.repeated``), so no key can be told for it, and nothing is counted or logged."""
    return None if who.repeated is None else repeated_key(who.repeated)


def early(plan: RoutePlan) -> bool:
    """Whether the protocol can decide this plan from the head alone, without awaiting: memory
    layers only (a Redis layer is a round trip), and no account read from the body."""
    return not plan.remote and not plan.needs_account


def refusal(plan: RoutePlan, verdict: Verdict) -> tuple[list[Header], bytes]:
    """A 429's headers and body for a refused verdict (only the layer that refused applied)."""
    a = verdict.applied[0]
    # a cost this limit can never admit: waiting will not help (a fallback store's smaller local
    # share while Redis is away is not that: its request is admitted once Redis is back)
    if a.decision[2] == math.inf and plan.cost > a.variant.max_cost:
        return never_admitted(a.layer.name, plan.cost, a.variant.max_cost, quota_text(a))
    return rejection(a.layer.name, a.decision, quota_fields(verdict))


def quota_text(a: Applied) -> QuotaText:
    """A limit's quota text; an adaptive limit's quota is its current limit."""
    return a.variant.text.at(a.layer.current_limit) if a.layer.observes else a.variant.text


def quota_fields(verdict: Verdict, legacy: bool = True) -> list[Header]:
    """Quota headers for the limits with a finite quota (``none`` has none). ``legacy``: with
    the X-RateLimit trio."""
    if len(verdict.applied) == 1:  # one limit, the common case: no lists to build
        a = verdict.applied[0]
        if a.decision[1] == math.inf:
            return []
        return limit_headers(quota_text(a), a.decision, legacy)
    applied = [(quota_text(a), a.decision) for a in verdict.applied if a.decision[1] < math.inf]
    if not applied:
        return []
    binding = min(range(len(applied)), key=lambda i: applied[i][1][1])
    return quota_headers(applied, binding, legacy)
