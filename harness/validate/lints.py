"""Lints of `validate`: the pitfalls this domain knows, read off the policy file, each finding
backed by a measurement (a replay of the policy and of the corrected policy) where one exists."""

from __future__ import annotations

import re
from collections.abc import Callable

from harness.campaign.policy_file import Limit, PolicyFile
from harness.campaign.thresholds import effective

from .checks import BURSTY, CheckVerdict, burst_of, display, measure, suggest_fix
from .sim import PageTraffic, attack_result, deployment, page_result, rotation_admission

Finding = tuple[str, str | None] | tuple[str, str | None, str | None]
"""(what is wrong, the suggestion with numbers[, its fix alone: CheckVerdict.fix])."""


def lint_verdict(name: str, summary: str, findings: list[Finding]) -> CheckVerdict:
    fixes = [f[2] if len(f) > 2 else f[1] for f in findings]
    return CheckVerdict(
        name=f"lint: {name}", kind="lint", limit=None, metric=name, value=float(len(findings)),
        display="ok" if not findings else f"{len(findings)} finding{'s' * (len(findings) > 1)}",
        threshold="no findings", passed=not findings,
        message="; ".join(f[0] for f in findings) or summary,
        suggestion="; ".join(f[1] for f in findings if f[1]) or None,
        fix="; ".join(f for f in fixes if f) or None,
    )


def _measured_fix(policy: PolicyFile, limit: Limit, metric: str) -> tuple[str | None, str | None]:
    """``suggest_fix`` under the limit's own threshold: (suggestion, fix), or Nones."""
    return suggest_fix(policy, limit, metric, effective(metric, limit.name, policy.thresholds)) or (None, None)


def _over(policy: PolicyFile, limit: Limit) -> tuple[float, str | None, str | None]:
    return (measure(policy, limit, "over_admission"), *_measured_fix(policy, limit, "over_admission"))


def fixed_window_capacity(policy: PolicyFile) -> list[Finding]:
    out = []
    for lim in policy.limits:
        if lim.algorithm == "fixed_window" and lim.protects == "capacity":
            value, hint, fix = _over(policy, lim)
            out.append((f"'{lim.name}' protects capacity with a fixed window: {display('over_admission', value)} "
                        f"of the limit across a window edge", hint, fix))
    return out


def burst_below_page_load(policy: PolicyFile) -> list[Finding]:
    page = policy.traffic.page_load * policy.page_route.cost
    out = []
    for lim in policy.limits:
        if lim.covers(policy.page_route.name) and burst_of(lim) < page:
            kind = "burst" if lim.algorithm in BURSTY else "limit"
            value = measure(policy, lim, "page_load_429_rate")
            out.append((f"'{lim.name}': {kind} {burst_of(lim):g} < page load of {page:g}: "
                        f"{display('page_load_429_rate', value)} of page loads see a 429",
                        *_measured_fix(policy, lim, "page_load_429_rate")))
    return out


def ip_key_behind_proxy(policy: PolicyFile) -> list[Finding]:
    keys = policy.keys
    if not keys.behind_proxies or keys.trusted_proxies is not None:
        return []
    out = []
    for lim in (lim for lim in policy.limits if lim.key == "ip"):
        what = (f"'{lim.name}' keys by IP behind proxies with no trusted_proxies: either every client is keyed by "
                "the proxy's address, or by the spoofable left-most X-Forwarded-For")
        if lim.covers(policy.page_route.name):
            dep = deployment(policy, lim)
            users = policy.traffic.users
            shared = page_result(dep, PageTraffic.of(policy, lim, abusers=0, shared_key=True)).legit_rejection_rate
            own = page_result(dep, PageTraffic.of(policy, lim, abusers=0)).legit_rejection_rate
            hint = (f"keyed by the proxy, {users} users at peak share one key and {display('legit_rejection_rate', shared)} of their "
                    f"requests see a 429; trusted_proxies: <hops you run> keys each client: {display('legit_rejection_rate', own)}")
        else:
            hint = (f"keyed by the proxy, all clients share {lim.limit:g} per {lim.window_s:g} s; "
                    "set trusted_proxies to the number of proxies you run")
        out.append((what, hint))
    return out


def ipv6_without_prefix(policy: PolicyFile) -> list[Finding]:
    keys, t = policy.keys, policy.traffic
    if not keys.ipv6 or keys.ipv6_prefix not in (None, 128):
        return []
    out = []
    for lim in (lim for lim in policy.limits if lim.key == "ip"):
        rotating, aggregated = _rotation(policy, lim)
        out.append((f"'{lim.name}' keys IPv6 clients per address: one client rotating through "
                    f"{t.attacker_addresses} addresses of its /64 gets {rotating:.2f}× the limit",
                    f"ipv6_prefix: 64 keys the /64 as one client: {aggregated:.2f}×"))
    return out


def local_limit_not_divided(policy: PolicyFile) -> list[Finding]:
    store = policy.store
    if policy.nodes < 2 or store.effective_mode != "local" or store.divide_by_nodes:
        return []
    out = []
    for lim in policy.limits:
        value, hint, fix = _over(policy, lim)
        out.append((f"'{lim.name}': each of {policy.nodes} nodes enforces the full {lim.limit:g} per "
                    f"{lim.window_s:g} s: {display('over_admission', value)} of the limit gets through", hint, fix))
    return out


def naive_store(policy: PolicyFile) -> list[Finding]:
    if policy.store.effective_mode != "naive":
        return []
    out = []
    for lim in policy.limits:
        value, hint, fix = _over(policy, lim)
        out.append((f"'{lim.name}': INCR then EXPIRE is a fixed window whatever the algorithm "
                    f"({display('over_admission', value)} across a window edge), and a crash between the two "
                    f"leaves a key without TTL, rejected for good after {lim.limit:g}", hint, fix))
    return out


def cacheable_429(policy: PolicyFile) -> list[Finding]:
    header = policy.response.cache_control
    directives = {d.strip().split("=")[0].lower() for d in (header or "").split(",")}
    if "no-store" in directives:
        return []
    age = re.search(r"(?:s-maxage|max-age)\s*=\s*(\d+)", header or "")
    if age:
        what = f"429 sent with Cache-Control: {header!r}: a shared cache may serve one client's 429 to every client for {age[1]} s"
    elif header:
        what = f"429 sent with Cache-Control: {header!r} (no no-store): caches may keep it"
    else:
        what = "429 sent without Cache-Control: a CDN set to cache errors may serve one client's 429 to others"
    return [(what, "send Cache-Control: no-store on every 429")]


def retry_after_missing(policy: PolicyFile) -> list[Finding]:
    if policy.response.retry_after:
        return []
    waits = ", ".join(
        f"'{lim.name}' {attack_result(deployment(policy, lim), policy.traffic.seed).retry_after_p50_s:.1f} s"
        for lim in policy.limits)
    return [("429 sent without Retry-After: clients guess when to retry (and retry storms follow)",
             f"send Retry-After: the limiter already computes it (median wait under attack: {waits})")]


def login_single_key(policy: PolicyFile) -> list[Finding]:
    t = policy.traffic
    out = []
    for route in (r for r in policy.routes if r.login):
        covering = [lim for lim in policy.limits if lim.covers(route.name)]
        keys = {lim.key for lim in covering}
        if not covering:
            out.append((f"login route '{route.name}' has no limit", "limit it per IP and per account (key: user)"))
        elif "ip" not in keys:
            lim = covering[0]
            spray, held = _rotation(policy, lim)
            out.append((f"login route '{route.name}' is limited by account only: one address spraying "
                        f"{t.attacker_addresses} accounts gets {spray:.2f}× the per-account limit",
                        f"add a per-IP limit (key: ip) of {lim.limit:g} per {lim.window_s:g} s: that address gets {held:.2f}×"))
        elif not keys & {"user", "api_key"}:
            lim = covering[0]
            botnet, held = _rotation(policy, lim)
            out.append((f"login route '{route.name}' is limited by IP only: a botnet of {t.attacker_addresses} "
                        f"addresses gets {botnet:.2f}× the per-IP limit in guesses at one account",
                        f"add a per-account limit (key: user) of {lim.limit:g} per {lim.window_s:g} s: "
                        f"that account gets {held:.2f}×"))
    return out


def _rotation(policy: PolicyFile, lim: Limit) -> tuple[float, float]:
    """The policy's attacker against ``lim``: (admitted / L cycling through its addresses or
    accounts, admitted / L as one key), from the same seeded traffic."""
    dep, t = deployment(policy, lim), policy.traffic
    return (rotation_admission(dep, t.attacker_addresses, t.abuse_factor, True, t.seed),
            rotation_admission(dep, t.attacker_addresses, t.abuse_factor, False, t.seed))


def route_cost_fits(policy: PolicyFile) -> list[Finding]:
    divisor = policy.local_divisor
    out = []
    for route in policy.routes:
        for lim in (lim for lim in policy.limits if lim.covers(route.name)):
            most = burst_of(lim, divisor)
            if route.cost > most:
                out.append((f"'{route.name}' costs {route.cost:g} but '{lim.name}' admits at most {most:g} at once "
                            f"per node: it is never admitted", f"burst >= {route.cost * divisor:g} on '{lim.name}'"))
    return out


LINTS: dict[str, tuple[str, Callable[[PolicyFile], list[Finding]]]] = {
    "fixed_window_capacity": ("no fixed window protects capacity", fixed_window_capacity),
    "burst_below_page_load": ("every burst holds a page load", burst_below_page_load),
    "ip_key_behind_proxy": ("IP keys read X-Forwarded-For past a trusted proxy count (or no IP keys)", ip_key_behind_proxy),
    "ipv6_without_prefix": ("IPv6 clients aggregated by prefix (or no IP keys)", ipv6_without_prefix),
    "local_limit_not_divided": ("local limits divided by the node count (or one node / shared store)", local_limit_not_divided),
    "naive_store": ("no INCR-then-EXPIRE store", naive_store),
    "cacheable_429": ("429 carries Cache-Control: no-store", cacheable_429),
    "retry_after_missing": ("429 carries Retry-After", retry_after_missing),
    "login_single_key": ("login routes limited per IP and per account (or no login routes)", login_single_key),
    "route_cost_fits": ("every route's cost fits every limit's burst", route_cost_fits),
}


def run_lints(policy: PolicyFile) -> list[CheckVerdict]:
    return [lint_verdict(name, summary, lint(policy)) for name, (summary, lint) in LINTS.items()]

