"""validate's latency checks, for a policy file that declares its downstream (``downstream:``):
the policy's limit in front of that downstream in virtual time (harness/sim/system.py), at the
declared peak and on a ramp past it. Answers "at our peak, what P99 does this policy give, and
how high can the rate go before P99 passes our bound?", with the slots that would fix it."""

from __future__ import annotations

from harness.campaign.live import DownstreamSettings
from harness.campaign.policy_file import Downstream, Limit, PolicyFile, params_of
from harness.sim.runner import SimRun, system_row
from harness.sim.simulator import replay
from harness.sim.system import system_for
from scenarios import build_model
from targets.algorithms import Policy, get_algorithm

from .checks import CheckVerdict

MAX_REQUESTS = 200_000
"""Requests per simulated run: the peak run and the ramp last at most 20 and 30 s, less at high rates."""
RAMP_TOP = 4.0
"""The ramp rises from a quarter of the peak to this many times it."""
MAX_SLOTS_FACTOR = 64


def _row(policy: PolicyFile, limit: Limit, ds: Downstream, start: float, end: float, slots: int) -> dict:
    duration = min(30.0 if start != end else 20.0, 2 * MAX_REQUESTS / (start + end))
    model = build_model("ramp", limit.limit, limit.window_s, policy.traffic.seed, {
        "start_rps": str(start), "end_rps": str(end), "duration_s": str(duration),
        "clients": str(policy.traffic.users), "shared_key": "0", "p99_bound_ms": str(ds.p99_bound_ms)})
    params = params_of(limit, policy.local_divisor)
    downstream = DownstreamSettings(concurrency=slots, median_ms=ds.median_ms, sigma=ds.sigma)
    spec = system_for(model, limit.algorithm, downstream=downstream, seed=policy.traffic.seed)
    result = replay(model, get_algorithm(limit.algorithm), params, system=spec)
    run = SimRun("ramp", limit.algorithm, model, params, Policy(limit.limit, limit.window_s, limit.burst))
    return system_row(run, result)


def _p99(policy: PolicyFile, limit: Limit, ds: Downstream, slots: int) -> float:
    return _row(policy, limit, ds, ds.peak_rps, ds.peak_rps, slots)["latency_p99_intended_ms"] or 0.0


def _slots_needed(policy: PolicyFile, limit: Limit, ds: Downstream) -> int | None:
    """The fewest slots (doubling, then halving back) with P99 at the peak under the bound."""
    slots = ds.concurrency * 2
    while _p99(policy, limit, ds, slots) >= ds.p99_bound_ms:
        slots *= 2
        if slots > ds.concurrency * MAX_SLOTS_FACTOR:
            return None
    low = slots // 2
    while slots - low > 1:
        mid = (low + slots) // 2
        low, slots = (low, mid) if _p99(policy, limit, ds, mid) < ds.p99_bound_ms else (mid, slots)
    return slots


def _suggestion(policy: PolicyFile, limit: Limit, ds: Downstream, sustained: float | None) -> str:
    slots = _slots_needed(policy, limit, ds)
    more = (f"give the downstream {slots} slots instead of {ds.concurrency}" if slots is not None else
            f"no downstream of up to {ds.concurrency * MAX_SLOTS_FACTOR} slots keeps P99 under the bound")
    cap = f"; or cap what reaches it below {sustained:,.0f}/s (a global limit)" if sustained else ""
    return more + cap


def run_latency_checks(policy: PolicyFile) -> list[CheckVerdict]:
    """P99 at the declared peak, and the highest offered rate with P99 under the bound, for the
    limit on the page route (empty without ``downstream:``)."""
    ds = policy.downstream
    if ds is None:
        return []
    limit = next((lim for lim in policy.limits if lim.covers(policy.page_route.name)), policy.limits[0])
    bound = f"< {ds.p99_bound_ms:,.0f} ms"
    p99 = _p99(policy, limit, ds, ds.concurrency)
    ramp = _row(policy, limit, ds, ds.peak_rps / 4, ds.peak_rps * RAMP_TOP, ds.concurrency)
    sustained = ramp.get("ramp_sustained_rps") or 0.0
    failing = p99 >= ds.p99_bound_ms or sustained < ds.peak_rps
    suggestion = _suggestion(policy, limit, ds, sustained) if failing else None
    where = f"{limit.name} in front of {ds.concurrency} slots x {ds.median_ms:g} ms"
    return [
        CheckVerdict(f"{limit.name}: downstream_p99_at_peak", "simulation", limit.name, "downstream_p99_at_peak", p99,
                     f"{p99:,.1f} ms", bound, p99 < ds.p99_bound_ms,
                     f"at the peak of {ds.peak_rps:,.0f}/s, {where}: P99 {p99:,.1f} ms",
                     suggestion if p99 >= ds.p99_bound_ms else None),
        CheckVerdict(f"{limit.name}: downstream_sustained_rps", "simulation", limit.name, "downstream_sustained_rps",
                     sustained, f"{sustained:,.0f}/s", f">= {ds.peak_rps:,.0f}/s", sustained >= ds.peak_rps,
                     f"P99 stays {bound} up to {sustained:,.0f}/s offered ({where})",
                     suggestion if sustained < ds.peak_rps else None),
    ]
