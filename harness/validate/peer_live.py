"""`validate --live` of a peer's config file: what the limiter tells a client it
refuses, asked over HTTP (harness/live/peers/response.py), and whether it refuses where the model
the simulation judged says it does.

A config file runs in a real peer in front of a ``none`` target: for NGINX its limiting lines
(zones, maps, ``limit_req``, the 429's status, error page and headers, ``real_ip``) in the
server the suite generates (harness/live/peers/nginx.py: NginxFilePeer). A URL is measured
before it is judged (measured.py).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from harness.campaign.policy_file import PolicyFile, params_of
from harness.live.peers import ProcessPeer
from harness.live.peers.response import HELD_MS, PROBE_PREFIX, Refusal, refusal
from harness.live.peers.standalone import model_decisions, peer_before_none
from harness.live.supervise import signals_interrupt
from targets.algorithms import Policy, get_algorithm

from .checks import CheckVerdict, burst_of

PROBE_MARGIN = 50
"""Requests beyond twice the largest burst before giving up on a refusal."""
GENERIC_FIX = ("answer a refusal with 429, Content-Type: application/problem+json (RFC 9457), a Retry-After "
               "that holds and Cache-Control: no-store")


def _probe(live: ProcessPeer, policy: Policy, out: Path | None, max_requests: int,
           refused: frozenset[int]) -> tuple[Refusal, list[float] | None]:
    """The refusal probe on the started peer; then, the peer stopped (its log complete), its own
    decision times of the probe's requests (None: its log lacks one). A peer that does not start
    raises RunFailed with its own error lines (``peer_before_none`` has stopped it)."""
    with tempfile.TemporaryDirectory(prefix="validate-peer-") as tmp:
        folder = out if out is not None else Path(tmp)
        with peer_before_none(live.spec.name, policy, folder, live=live) as (served, logs):
            found = refusal(served, max_requests, refused=refused)
        at = dict(zip(*live.decisions(logs, store=live.spec.store).select(["request_id", "t"]).to_pydict().values()))
        ids = [f"{PROBE_PREFIX}{i}" for i in range(len(found.statuses))]
        return found, [at[i] for i in ids] if all(i in at for i in ids) else None


def peer_verdicts(policy: PolicyFile, *, live: ProcessPeer, nominal: Policy | None = None,
                  refused: frozenset[int] = frozenset({429}), out: Path | None = None) -> list[CheckVerdict]:
    """The live rows: the refusal's shape, Retry-After's truth and, for one limit, the requests
    admitted before the first refusal against the model's count on the peer's own decision times
    (else the send times). ``live``: the peer running the file (``nominal`` is the file's own first limit)."""
    most = max(burst_of(lim) for lim in policy.limits)
    first = policy.limits[0]
    with signals_interrupt():
        found, own = _probe(live, nominal or Policy(first.limit, first.window_s, first.burst), out,
                            int(2 * most) + PROBE_MARGIN, refused)
    fix = (live.response_fix(nominal) if nominal is not None else None) or GENERIC_FIX
    return [*shape_verdicts(found, refused, fix), *agreement(policy, found, own, live.spec.system)]


def _row(metric: str, shown: str, threshold: str, passed: bool, message: str, fix: str | None) -> CheckVerdict:
    return CheckVerdict(f"live: {metric.removeprefix('live_').replace('_', ' ')}", "live", None, metric, float(passed),
                        shown, threshold, passed, message, None if passed else fix, None if passed else fix)


def shape_verdicts(found: Refusal, refused: frozenset[int], fix: str) -> list[CheckVerdict]:
    if found.status is None:
        return [_row("live_refusal", "none", "a refusal", False, found.findings(refused)[0], None)]
    kind = found.body_type or "none"
    rows = [
        _row("live_refusal_status", str(found.status), "429", found.status == 429,
             f"refused with {found.status} after {len(found.statuses) - 1} admitted requests at one key", fix),
        _row("live_refusal_body", kind, "problem+json", kind.endswith("json"),
             f"the refusal's body is {kind}" + ("" if kind.endswith("json") else ": a client cannot read why"), fix),
        _row("live_retry_after", found.retry_after if found.retry_after is not None else "none", "sent",
             found.retry_after_s is not None, _retry_after_said(found), fix),
        _row("live_limit_fields", f"{len(found.letter)} malformed", "by the letter", not found.letter,
             "; ".join(found.letter) or "every limit field by the letter (RFC 9110, the RateLimit draft)",
             "send Retry-After as whole seconds or an HTTP-date, and every limit field's value as a non-negative integer"),
        _row("live_no_store", found.cache_control or "none", "no-store", found.no_store,
             f"Cache-Control: {found.cache_control}" if found.cache_control else
             "no Cache-Control: a shared cache may serve one client's refusal to others", fix),
    ]
    if found.retry_status is not None:
        truthful = found.retry_status not in refused
        rows.append(_row("live_retry_after_truthful", str(found.retry_status), "admitted", truthful,
                         f"a retry {found.retry_after_s:g} s after the refusal, as Retry-After said, got {found.retry_status}",
                         f"Retry-After >= the time until a request's worth is back ({fix})"))
    return rows


def _held(name: str, algorithm: str, found: Refusal, admitted_model: int) -> CheckVerdict:
    """The peer delayed what the model refuses: the wait it added, and where refusing would start."""
    n = len(found.statuses)
    refuses = (f"sent back to back, unheld, the model ({algorithm}) admits {admitted_model} and refuses the rest "
               "(what a limiter that refuses past its burst, NGINX with nodelay, answers)"
               if admitted_model < n else f"the model ({algorithm}) refuses none of them either")
    return CheckVerdict(f"live: {name}: held, not refused", "live", name, "live_held_ms", found.held_ms,
                        f"{found.held_ms:,.0f} ms", "refused", False,
                        f"{n} requests at one key, one after the other, all admitted, answers up to "
                        f"{found.held_ms:,.0f} ms late: the limiter made them wait; {refuses}",
                        "refuse past the burst instead of queueing (NGINX: limit_req ... nodelay, or delay=N to hold "
                        "only the first N): a held client waits where a refused one could back off", None)


def _retry_after_said(found: Refusal) -> str:
    """The Retry-After row's message: the value, or why it is no wait a client can read."""
    if found.retry_after is None:
        return "no Retry-After: a client cannot tell when to retry"
    broken = [f for f in found.letter if f.startswith("Retry-After ")]
    return broken[0] if broken else f"Retry-After: {found.retry_after}"


def agreement(policy: PolicyFile, found: Refusal, own: list[float] | None = None, system: str = "peer") -> list[CheckVerdict]:
    """One limit: the requests the peer admitted before refusing == the model's on the same times
    (``own``, the peer's decision times, else the send times); a peer that held the requests
    instead, against where the model refuses."""
    if len(policy.limits) != 1 or (found.status is None and found.held_ms < HELD_MS):
        return []
    lim = policy.limits[0]
    n = len(found.statuses)
    # held requests were sent only when the one before came back: unheld, they would have gone back
    # to back, one round trip apart (the fastest answer), and that is where refusing would start
    if found.status is None:
        times = [found.sent_t[0] + i * found.round_trip_s for i in range(n)]
    else:
        times = own if own is not None else found.sent_t[:n]
    model = model_decisions(get_algorithm(lim.algorithm).decide, params_of(lim), times, ["probe"] * n)
    admitted_model = model.index(False) if False in model else len(model)
    if found.status is None:
        return [_held(lim.name, lim.algorithm, found, admitted_model)]
    admitted = n - 1
    ok = admitted == admitted_model
    fed = f"on {system}'s own decision times" if own is not None else "at the same send times"
    return [CheckVerdict(f"live: {lim.name}: admitted before refusing", "live", lim.name, "live_model_agreement",
                         float(admitted), str(admitted), f"model: {admitted_model}", ok,
                         f"{admitted} requests at one key, one after the other, before the first refusal; "
                         f"the simulated model ({lim.algorithm}) admits {admitted_model} of them {fed}",
                         None if ok else "the peer does not count as the model: compare its decisions with "
                         "run_bench.py bench peer-agreement")]
