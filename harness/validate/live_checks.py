"""The live rows of the `validate` verdict (kind ``live``): each live metric against its threshold,
with the simulated twin quoted beside it, so a reader sees whether HTTP changed the picture.

A live failure reuses the simulated check's measured suggestion where one exists: the
simulation already tried the corrections, re-measuring them over HTTP would cost a run each.
"""

from __future__ import annotations

from harness.campaign.policy_file import PolicyFile
from harness.campaign.thresholds import FALLBACK, effective

from .checks import CheckVerdict, display
from .live import LiveOutcome, ProbeResult
from .probes import page_limits

METRICS_OF = {
    "page-loads": ("live_legit_rejection_rate", "live_p99_ms", "live_cpu_ms_per_1k"),
    "nat": ("live_nat_legit_rejection_rate",),
    "burst": ("live_over_admission",),
}
GENERATOR_NOTE = " (the load generator was the bottleneck: an upper bound)"


def live_verdicts(policy: PolicyFile, outcome: LiveOutcome, simulated: list[CheckVerdict]) -> list[CheckVerdict]:
    return [_verdict(policy, r, metric, simulated) for r in outcome.results for metric in METRICS_OF[r.probe.kind]]


def _verdict(policy: PolicyFile, result: ProbeResult, metric: str, simulated: list[CheckVerdict]) -> CheckVerdict:
    limit = result.probe.limit.name if result.probe.limit else None
    name = f"live: {limit}: over_admission" if limit else f"live: {metric.removeprefix('live_')}"
    threshold = effective(metric, limit, policy.thresholds)
    value = result.values.get(metric)
    if value is None:
        why = f"live run failed: {result.error}" if result.error else "nothing admitted to measure"
        return CheckVerdict(name, "live", limit, metric, None, "n/a", str(threshold), False, why)
    passed = threshold.holds(value)
    twins = _twins(policy, result, metric, simulated)
    message = _message(result, metric, value)
    if twins:
        message += "; simulated: " + ", ".join(f"{v.limit} {v.display}" for v in twins)
    suggestion = None if passed else _suggest(result, metric, value, twins)
    fixes = [v.fix for v in twins if v.fix]
    return CheckVerdict(name, "live", limit, metric, value, display(metric, value), str(threshold), passed, message,
                        suggestion=suggestion, fix="; ".join(fixes) if suggestion and fixes else suggestion)


def _twins(policy: PolicyFile, result: ProbeResult, metric: str, simulated: list[CheckVerdict]) -> list[CheckVerdict]:
    """The simulated checks of the same metric on the limits this run exercised."""
    base = FALLBACK.get(metric)
    limits = {result.probe.limit.name} if result.probe.limit else {lim.name for lim in page_limits(policy)}
    return [v for v in simulated if v.kind == "simulation" and v.metric == base and v.limit in limits]


def _message(result: ProbeResult, metric: str, value: float) -> str:
    f, probe = result.facts, result.probe
    bound = GENERATOR_NOTE if f.get("generator_bound") else ""
    if metric == "live_p99_ms":
        return f"P99 of {f['admitted']:,} admitted legitimate requests, from the intended send time: {value:.1f} ms{bound}"
    if metric == "live_cpu_ms_per_1k":
        return f"the target used {value:,.0f} ms of CPU per 1,000 requests ({f['requests']:,} requests){bound}"
    if metric == "live_over_admission":
        assert probe.limit is not None
        return (f"a boundary burst of 2 x {probe.burst_size} requests at one key got {value:.2f}× the limit through "
                f"in a window ({probe.limit.window_s:g} s compressed to {probe.run.policy.window_s:g} s)")
    who = "legitimate requests" if metric == "live_legit_rejection_rate" else \
        f"requests from {probe.run.scenario.params['users']} clients behind one address"
    by = ", ".join(f"'{k}' {n}" for k, n in f["rejected_by"].items())
    return f"{display(FALLBACK[metric], value)} of {who} saw a 429 live ({f['rejected']} of {f['legit']}" + \
        (f"; rejected by {by})" if by else ")")


def _suggest(result: ProbeResult, metric: str, value: float, twins: list[CheckVerdict]) -> str:
    fixes = [f"{v.limit}: {v.suggestion}" for v in twins if v.suggestion]
    if fixes:
        return "as simulated: " + "; ".join(fixes)
    if result.facts.get("generator_bound"):
        return "the load generator saturated its core: rerun on a quieter machine before changing the policy"
    if metric == "live_p99_ms":
        return (f"admitted requests waited {value:.0f} ms at P99 with no simulated service time behind the limiter: "
                "a queueing limiter (leaky_bucket mode=queue waits up to max_delay_s) or a saturated machine")
    if metric == "live_cpu_ms_per_1k":
        return (f"{value / 1000:.2f} ms of target CPU per request: fewer layers on the page route, or an algorithm "
                "with constant state (gcra, token_bucket) instead of sliding_log")
    return "the simulation passes here: compare the run's decisions.parquet with the simulated run (--out keeps it)"
