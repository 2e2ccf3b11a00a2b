"""`validate --url`: the endpoint measured before it is judged. The judge's own session
(harness/judge: fingerprint and worst-case hunt, every request on a key of its own, within the
same caps as ``run_bench.py judge``) measures L, W, burst and the model; the claim (the policy
file's first limit) is compared with what was measured, and the refusal's shape is read off the
session's first refusal. No request spends a key the claim is about: the reachability request is
the session's own ``reach`` on a fresh key, every request is in the client log with its role.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from analysis.header_truth import Answer
from analysis.theory import over_admission_bound
from analysis.worst_case import worst_case
from contract.run_info import RunPolicy
from harness.campaign.policy_file import Limit, PolicyFile
from harness.judge.endpoint import MAX_RATE, MAX_REQUESTS, MAX_TIME_S, MAX_WAIT_S, TIMEOUT_S, HttpEndpoint, JudgeError, KeySpec, Sent
from harness.judge.hunt import seen
from harness.judge.verdict import Verdict, client_log, judge, measurement
from harness.live.peers.response import Refusal
from harness.live.supervise import signals_interrupt
from harness.sim.fingerprint import BUCKETED, PHRASES, Seen, agreement
from targets.algorithms import Policy

from .checks import CheckVerdict
from .peer_live import GENERIC_FIX, shape_verdicts

TOLERANCE = 0.05
"""A measured L, W or burst within 5% of the claim is the claim (the goal the fingerprint meets)."""
AGREE = 0.99
"""The claimed model under the claimed policy must repeat this share of the recorded decisions."""
KEY_OF_KIND = {"ip": "ip", "api_key": "header:X-API-Key", "user": "header:X-User"}
"""How the session mints keys for a claimed limit's key kind when ``--key`` is not given."""


@dataclass(frozen=True)
class Caps:
    """The judge's caps (``run_bench.py judge``'s defaults): requests, rate, wait, timeout, session time."""

    max_requests: int = MAX_REQUESTS
    max_rate: float = MAX_RATE
    max_wait_s: float = MAX_WAIT_S
    timeout_s: float = TIMEOUT_S
    max_time_s: float = MAX_TIME_S


def measure(url: str, key: KeySpec, caps: Caps = Caps(), on_sent: Callable[[Sent], None] | None = None,
            claim: Policy | None = None) -> tuple[Verdict, HttpEndpoint]:
    """One judging session: a ``reach`` request on a key of its own (key 0: the hunt's keys start
    at 1), then the fingerprint and the hunt (over the ``claim``'s window when one is given, as
    ``judge --claim``). A JudgeError (unreachable, stalled, not a limiter's answer, no limit within
    the caps) propagates, its partial measurement kept: one line, exit 2. ``on_sent``: told each
    request once answered (a progress display)."""
    endpoint = HttpEndpoint(url, key, caps.max_requests, caps.max_rate, caps.timeout_s, caps.max_time_s,
                            on_sent=on_sent)
    try:
        endpoint.send(0, "reach")
        return judge(endpoint, caps.max_wait_s, claim), endpoint
    except JudgeError as exc:
        exc.measured = measurement(endpoint, None, str(exc))
        raise
    finally:
        endpoint.close()


def claimed(lim: Limit) -> Policy:
    return Policy(lim.limit, lim.window_s, lim.burst)


def described(model: str, p: Policy) -> str:
    return PHRASES[model].format(L=f"{p.limit:g}", W=f"{p.window_s:g}", B=f"{p.effective_burst:g}")


def near(measured: float, claim: float) -> bool:
    return math.isclose(measured, claim, rel_tol=TOLERANCE)


def _row(metric: str, lim: Limit, shown: str, threshold: str, passed: bool, message: str) -> CheckVerdict:
    fix = None if passed else ("the endpoint does not enforce the claim: correct the claim (the measured "
                               "figures) or the endpoint; run_bench.py judge URL shows the evidence")
    return CheckVerdict(f"live: {lim.name}: {metric.removeprefix('live_measured_').replace('_', ' ')}", "live",
                        lim.name, metric, float(passed), shown, threshold, passed, message, fix, fix)


def url_verdicts(policy: PolicyFile, url: str, key: KeySpec, caps: Caps = Caps(),
                 on_sent: Callable[[Sent], None] | None = None) -> tuple[list[CheckVerdict], str]:
    """The live rows for ``--url``: the refusal's shape and the claim against the measurement;
    and the session's client log (CSV, every request with its role, key and address)."""
    with signals_interrupt():
        v, endpoint = measure(url, key, caps, on_sent, claimed(policy.limits[0]))
    rows = shape_verdicts(refusal_of(endpoint, v), frozenset({429}), GENERIC_FIX)
    return [*rows, *claim_verdicts(policy, v, [s.answer for s in endpoint.log])], client_log(endpoint)


def claim_verdicts(policy: PolicyFile, v: Verdict, answers: list[Answer]) -> list[CheckVerdict]:
    """The claim against the measurement: L and W, or for a claimed bucket its rate and its burst
    (rows named by the claim, not by the model that fits best: a busy machine can make a bucket fit
    as a window, and the claim's rows must not change with it), the
    claimed model replayed on the recorded decisions, and the worst case within the claim's bound.
    A figure passes within 5% of the fitted one, or when the claimed figure, put in the fitted
    policy, repeats the decisions as well as the fit: a few dozen decisions do not pin a bucket's
    refill to 5% (measured on NGINX at 10 r/s: 5 per 0.469 s and 5 per 0.5 s, both 100%). The
    claim is replayed with each decision allowed anywhere in its round trip (``agreement``'s
    ``within_round_trip``): only what no such time explains contradicts it. On a machine busy
    beside the endpoint (stress-ng on both cores) a request waits before or after the decision,
    and a refusal dated a few ms late read as a token the claim would have had."""
    lim, best = policy.limits[0], v.best
    claim, got = claimed(lim), best.policy
    held = v.checked[0] if v.checked else None
    measured_as = best.sentence() if v.explained or held is None else (
        f"no model in the suite explains this limiter: {v.unexplained()} (the nearest, {best.what()}, predicted "
        f"{held.agreed} of {held.decisions} held-back decisions)")
    said = f"claimed {described(lim.algorithm, claim)}; measured: {measured_as}"
    if len(policy.limits) > 1:
        said += f" (the first of {len(policy.limits)} limits is compared)"
    decisions = seen(answers)
    # the fit's own agreement on these decisions: the judge fits on part of them (the held-back
    # keys are predicted, never fitted on), so ``best.agreed`` counts fewer
    fitted = agreement(best.model, got, decisions, within_round_trip=True, extra=best.extra)

    def fits(measured: float, claim_value: float, instead: Policy) -> bool:
        return near(measured, claim_value) or agreement(best.model, instead, decisions, within_round_trip=True,
                                                         extra=best.extra) >= fitted

    if lim.algorithm in BUCKETED:  # a bucket claim is checked as a bucket, whatever model fits best
        rate, got_rate = claim.limit / claim.window_s, got.limit / got.window_s
        rows = [_row("live_measured_rate", lim, f"{got_rate:.4g}/s", f"{rate:.4g}/s ±5%",
                     fits(got_rate, rate, replace(got, window_s=got.limit / rate)), said),
                _row("live_measured_burst", lim, f"{got.effective_burst:g}", f"{claim.effective_burst:g} ±5%",
                     fits(got.effective_burst, claim.effective_burst, replace(got, burst=claim.effective_burst)), said)]
    else:
        rows = [_row("live_measured_limit", lim, f"{got.limit:g}", f"{claim.limit:g} ±5%",
                     fits(got.limit, claim.limit, replace(got, limit=claim.limit)), said),
                _row("live_measured_window", lim, f"{got.window_s:g} s", f"{claim.window_s:g} s ±5%",
                     fits(got.window_s, claim.window_s, replace(got, window_s=claim.window_s)), said)]
    return [*rows, _replayed(lim, claim, decisions, said), _worst(lim, claim, answers)]


def _replayed(lim: Limit, claim: Policy, decisions: list[Seen], said: str) -> CheckVerdict:
    share = max(agreement(lim.algorithm, claim, decisions, within_round_trip=True), 0) / len(decisions)
    return _row("live_measured_model", lim, f"{share:.1%}", f">= {AGREE:.0%}", share >= AGREE,
                f"{lim.algorithm} under the claim repeats {share:.1%} of {len(decisions)} recorded decisions "
                f"(each at any time in its round trip); {said}")


def _worst(lim: Limit, claim: Policy, answers: list[Answer]) -> CheckVerdict:
    """The most admitted to one key in any window of the claim's length (never the fitted one:
    a claim of L per minute is a promise about any minute, whatever window the limiter keeps)."""
    bound = over_admission_bound(lim.algorithm, RunPolicy(claim.limit, claim.window_s, claim.effective_burst), {})
    w, most = worst_case(answers, claim.window_s), (bound or 1.0) * claim.limit * (1 + TOLERANCE)
    return _row("live_measured_worst_case", lim, f"{w.admitted}", f"<= {most:g}", w.admitted <= most,
                f"at most {w.admitted} admitted to one key within {w.span_s:.3f} s (key {w.key}); the claim "
                f"allows {bound or 1.0:g}x L = {(bound or 1.0) * claim.limit:g} in any {claim.window_s:g} s")


def refusal_of(endpoint: HttpEndpoint, v: Verdict) -> Refusal:
    """The session's first refusal as ``Refusal`` (the shape rows read it): its key's answers up to
    it (the admissions at one key before its first refusal), its headers, whether a retry at its
    Retry-After was admitted (the header truth's check) and every value of the session's limit
    fields that broke the letter (the header truth's verdict, as ``judge`` gives it)."""
    answers = [s.answer for s in endpoint.log]
    first = next((a for a in answers if not a.allowed), None)
    if first is None or endpoint.refusal_headers is None:
        return Refusal(statuses=[a.status for a in answers], letter=v.truth.letter())
    own = [a for a in answers if a.key == first.key]
    out = Refusal(statuses=[a.status for a in own[:own.index(first) + 1]], letter=v.truth.letter())
    h = endpoint.refusal_headers
    out.status, out.content_type, out.cache_control = first.status, h.get("content-type"), h.get("cache-control")
    out.retry_after, out.retry_after_s = h.get("retry-after"), first.fields.retry_after_s
    out.ratelimit_headers = sorted(k for k in h if k.startswith(("ratelimit", "x-ratelimit")))
    kept, broken = v.truth.retry_after.kept, v.truth.retry_after.broken
    out.retry_status = 429 if broken else 200 if kept else None
    return out


def key_spec(given: str | None, lim: Limit) -> KeySpec:
    """``--key`` as given, else the claimed limit's key kind (a ``global`` limit needs ``--key``:
    the judge measures one key at a time)."""
    if given is None and lim.key not in KEY_OF_KIND:
        raise JudgeError(f"limits[{lim.name}].key: {lim.key}: name how the endpoint tells clients apart with --key")
    return KeySpec.parse(given if given is not None else KEY_OF_KIND[lim.key])

