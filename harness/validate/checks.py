"""Simulated checks of `validate` and the suggestions for the ones that fail.

Each metric is measured for one limit in one situation (validate_sim). A failure is answered by
trying corrected policies in order of how small the change is, re-measuring the same metric on
each, and quoting the first one that passes: the suggestion's numbers are measured, not guessed
(or, for a ratio against L, bounded by the corrected algorithm's construction: ``sim.bounded``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from harness.campaign.policy_file import Limit, PolicyFile, params_of
from harness.campaign.thresholds import FALLBACK, SIM_METRICS, Threshold, effective
from targets.algorithms import PolicyError, get_algorithm

from .sim import PageTraffic, attack_result, bounded, deployment, page_metric, page_result

RATIO_METRICS = ("over_admission", "abusive_admission")
BURSTY = ("token_bucket", "gcra", "leaky_bucket", "traefik_rate")
"""Algorithms whose burst is its own parameter (for the others it is the limit L itself)."""
WINDOWED = ("fixed_window", "sliding_window_counter", "sliding_window_ring")
"""Up to ~2L across a window edge (the counter and the ring under an adversarial drip)."""


@dataclass(frozen=True)
class CheckVerdict:
    """One row of the verdict table (and one JUnit testcase)."""

    name: str
    kind: str
    """``lint``, ``simulation`` or ``live``."""
    limit: str | None
    metric: str
    value: float | None
    display: str
    threshold: str
    passed: bool
    message: str
    suggestion: str | None = None
    fix: str | None = None
    """The suggestion's change alone, for the terminal: printed once under every failure it fixes
    (not in the JSON, whose suggestion says it all)."""
    na: bool = False
    """Not judged: the model is approximate and the check needs exact decisions (``passed`` stays
    true so it fails nothing; the table says n/a)."""


def split(metric: str) -> tuple[str, str]:
    """``node_down_over_admission`` -> (``node_down``, ``over_admission``)."""
    for situation in ("node_down", "store_down"):
        if metric.startswith(situation + "_"):
            return situation, metric.removeprefix(situation + "_")
    return "normal", metric


def applies(policy: PolicyFile, limit: Limit, metric: str) -> bool:
    situation, base = split(metric)
    if situation == "node_down" and policy.nodes < 2:
        return False
    if situation == "store_down" and policy.store.backend != "redis":
        return False
    on_pages = limit.covers(policy.page_route.name)
    if base == "over_admission":
        return limit.protects == "capacity"
    if base == "abusive_admission":
        return on_pages and limit.protects == "capacity"
    if base == "nat_legit_rejection_rate":
        return on_pages and limit.key == "ip"
    return on_pages


def measure(policy: PolicyFile, limit: Limit, metric: str) -> float:
    situation, base = split(metric)
    dep = deployment(policy, limit, situation)
    if base == "over_admission":
        return attack_result(dep, policy.traffic.seed).over_admission
    if base == "nat_legit_rejection_rate":
        traffic = PageTraffic.of(policy, limit, users=policy.traffic.nat_clients, abusers=0,
                                 shared_key=limit.key == "ip")
        return page_result(dep, traffic).legit_rejection_rate
    return page_metric(dep, PageTraffic.of(policy, limit), base)


def display(metric: str, value: float) -> str:
    """A measured value, or a threshold's bound, in its metric's unit (×, %, ms): the verdict
    table's two columns read alike."""
    if metric == "live_p99_ms":
        return f"{value:,.1f} ms"
    if metric == "live_cpu_ms_per_1k":
        return f"{value:,.0f} ms"
    if split(FALLBACK.get(metric, metric))[1] in RATIO_METRICS:
        return f"{value:.2f}×"
    return f"{100 * value:.1f}%" if value == 0 or value >= 0.001 else f"{100 * value:.3f}%"


def phrase(policy: PolicyFile, metric: str, value: float) -> str:
    """What a measured value means, in a reader's words."""
    situation, base = split(metric)
    v = display(metric, value)
    text = {
        "legit_rejection_rate": f"{v} of legitimate requests see a 429",
        "page_load_429_rate": f"{v} of page loads see a 429",
        "abusive_admission": f"the abusive client gets {v} the limit in a window",
        "nat_legit_rejection_rate": f"{v} of requests from {policy.traffic.nat_clients} clients behind one address are rejected",
        "over_admission": f"up to {v} the limit gets through in a window",
    }[base]
    prefix = {"normal": "", "node_down": "with one node down, ", "store_down": "with the store down, "}[situation]
    return prefix + text


def check(policy: PolicyFile, limit: Limit, metric: str) -> CheckVerdict:
    threshold = effective(metric, limit.name, policy.thresholds)
    value = measure(policy, limit, metric)
    passed = threshold.holds(value)
    suggestion, fix = (None, None) if passed else suggest_fix(policy, limit, metric, threshold) or (None, None)
    return CheckVerdict(
        name=f"{limit.name}: {metric}", kind="simulation", limit=limit.name, metric=metric, value=value,
        display=display(metric, value), threshold=str(threshold), passed=passed,
        message=phrase(policy, metric, value), suggestion=suggestion, fix=fix,
    )


def run_checks(policy: PolicyFile) -> list[CheckVerdict]:
    return [check(policy, limit, m) for limit in policy.limits for m in SIM_METRICS if applies(policy, limit, m)]


def suggest_fix(policy: PolicyFile, limit: Limit, metric: str, threshold: Threshold) -> tuple[str, str] | None:
    """The smallest corrected policy that passes ``threshold``, with both numbers measured, and its
    fix alone (the diagnosis, the change and what it gives, without the measured problem the
    check's message already says): failures that one change fixes share it."""
    value = measure(policy, limit, metric)
    tried: list[str] = []
    for diagnosis, change, fixed in _fixes(policy, limit, metric, threshold):
        new_limit = next(lim for lim in fixed.limits if lim.name == limit.name)
        try:
            at_most = split(metric)[1] in RATIO_METRICS and bounded(deployment(fixed, new_limit, split(metric)[0]))
            new_value = 1.0 if at_most else measure(fixed, new_limit, metric)
        except PolicyError:  # a change the limit's model cannot express (Traefik: a fraction of a request)
            continue
        # a bound by construction is not replayed: the abusive client's share of a shared sliding
        # log of 1,000 a second was a second replay of 1.6 million requests to read 1.00x
        gives = f"{change} gives {'at most ' if at_most else ''}{display(metric, new_value)}"
        if threshold.holds(new_value):
            return f"{diagnosis}: {phrase(policy, metric, value)}; {gives}", f"{diagnosis}: {gives}"
        tried.append(gives)
    if tried:
        fix = f"no single change tried passes {threshold}: {'; '.join(tried)}"
        return f"{phrase(policy, metric, value)}; {fix}", fix
    return None


def with_limit(policy: PolicyFile, limit: Limit, /, **changes: Any) -> PolicyFile:
    limits = [lim.model_copy(update=changes) if lim.name == limit.name else lim for lim in policy.limits]
    return policy.model_copy(update={"limits": limits})


def with_store(policy: PolicyFile, /, **changes: Any) -> PolicyFile:
    return policy.model_copy(update={"store": policy.store.model_copy(update=changes)})


def burst_of(limit: Limit, divisor: int = 1) -> float:
    """Cost admissible at once: the algorithm's own max_cost (token bucket capacity, GCRA burst, L)."""
    return get_algorithm(limit.algorithm).max_cost(params_of(limit, divisor))


Fix = tuple[str, str, PolicyFile]
"""(diagnosis, the change in the file's words, the corrected policy)."""


def _fixes(policy: PolicyFile, limit: Limit, metric: str, threshold: Threshold) -> Iterator[Fix]:
    situation, base = split(metric)
    store, n = policy.store, policy.nodes
    mode = store.effective_mode
    over = base in RATIO_METRICS
    if situation == "store_down":
        yield from _store_down_fixes(policy, n)
    if mode == "naive" and over:
        yield ("naive INCR then EXPIRE counts a fixed window whatever the algorithm",
               "store.mode: shared (one Lua script per decision)", with_store(policy, mode="shared"))
    if mode == "local" and n > 1 and not store.divide_by_nodes and over:
        yield (f"{n} nodes each enforce the full limit of {limit.limit:g}",
               f"divide_by_nodes: true ({limit.limit / n:g} per node)", with_store(policy, divide_by_nodes=True))
    if mode == "local" and n > 1 and situation == "node_down":
        yield (f"local limits leave 1/{n} of the capacity on the node that is down",
               "store: redis, mode shared", with_store(policy, backend="redis", mode="shared"))
    if base in ("legit_rejection_rate", "page_load_429_rate"):
        yield from _page_fixes(policy, limit)
    if base == "nat_legit_rejection_rate":
        clients = policy.traffic.nat_clients
        yield (f"{clients} clients behind one NAT address share one IP key", "key: user (or api_key)",
               with_limit(policy, limit, key="user"))
        yield (f"{clients} clients behind one NAT address share one IP key", f"limit >= {limit.limit * clients:g}",
               _scaled(policy, limit, clients))
    if over:
        yield from _over_fixes(policy, limit, threshold)


def _store_down_fixes(policy: PolicyFile, n: int) -> Iterator[Fix]:
    store = policy.store
    divided = f"on_failure: fail_open, fallback: local_divided (limit/{n} per node)"
    if store.on_failure == "fail_closed":
        yield ("fail-closed rejects every request while the store is down", divided,
               with_store(policy, on_failure="fail_open", fallback="local_divided"))
    elif store.fallback == "none":
        yield ("fail-open without a fallback limit admits everything while the store is down", divided,
               with_store(policy, fallback="local_divided"))
    elif store.fallback == "local" and n > 1:
        yield (f"each of {n} nodes falls back to the full limit", divided, with_store(policy, fallback="local_divided"))


def _page_fixes(policy: PolicyFile, limit: Limit) -> Iterator[Fix]:
    t = policy.traffic
    cost = policy.page_route.cost
    page = t.page_load * cost
    divisor = policy.local_divisor
    page_text = f"page load of {t.page_load}" + (f" x cost {cost:g}" if cost != 1 else "")
    burst = burst_of(limit)
    if limit.key == "global" and t.abuse_factor > 1:
        # the abusive client sends at abuse_factor x the limit: a larger shared limit grows its
        # share too, so no limit or burst alone can pass; the first thing to try is its own key
        yield (f"one limit for every client: the abusive client at {t.abuse_factor:g}x the limit spends it for all",
               "key: ip (a limit per client)", with_limit(policy, limit, key="ip"))
    if limit.algorithm in BURSTY and burst < page * divisor:
        name = {"token_bucket": "token bucket capacity", "leaky_bucket": "leaky bucket capacity",
                "traefik_rate": "Traefik burst"}.get(
            limit.algorithm, "GCRA burst")
        for factor in (1, 1.5, 2, 3):
            b = math.ceil(page * divisor * factor)
            yield f"{name} {burst:g} < {page_text}", f"burst >= {b}", with_limit(policy, limit, burst=float(b))
    user_window = t.peak_requests_per_min / 60 * cost * limit.window_s
    need = max(user_window, page)
    if limit.limit < need * 1.25:
        for factor in (1.25, 2, 4):
            new = math.ceil(need * factor)
            yield (f"limit {limit.limit:g} per {limit.window_s:g} s is tight for a user's peak of "
                   f"{user_window:g} per window in pages of {page:g}", f"limit >= {new}",
                   _scaled(policy, limit, new / limit.limit))
    for factor in (2, 4):
        yield (f"limit {limit.limit:g} per {limit.window_s:g} s with burst {burst:g} rejects page loads at peak",
               f"limit and burst x{factor}", _scaled(policy, limit, factor))


def _scaled(policy: PolicyFile, limit: Limit, factor: float) -> PolicyFile:
    burst = None if limit.burst is None else limit.burst * factor
    return with_limit(policy, limit, limit=limit.limit * factor, burst=burst)


def _over_fixes(policy: PolicyFile, limit: Limit, threshold: Threshold) -> Iterator[Fix]:
    on_pages = limit.covers(policy.page_route.name)
    page = policy.traffic.page_load * policy.page_route.cost if on_pages else 1.0
    # half the headroom the threshold leaves, so the fix passes with a margin; never below a page
    allowed = max(page, math.floor((threshold.value - 1) * limit.limit / 2))
    if limit.algorithm in WINDOWED:
        yield (f"{limit.algorithm} admits up to 2L across a window edge", f"algorithm: gcra with burst {allowed:g}",
               with_limit(policy, limit, algorithm="gcra", burst=float(allowed), params={}))
    elif limit.algorithm in BURSTY and burst_of(limit) > allowed:
        yield (f"burst {burst_of(limit):g} on a limit of {limit.limit:g} admits L + burst in a window",
               f"burst {allowed:g}", with_limit(policy, limit, burst=float(allowed)))
    if limit.algorithm != "sliding_log":
        yield (f"{limit.algorithm} admits more than L in some window", "algorithm: sliding_log (exact)",
               with_limit(policy, limit, algorithm="sliding_log", burst=None, params={}))
