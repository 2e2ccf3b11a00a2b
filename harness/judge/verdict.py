"""One judging session's verdict: the fingerprint, the worst case with its evidence, the header
truth, and what it cost (requests by role, seconds); as text and as the client log's rows."""

from __future__ import annotations

import csv
import io
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from analysis.header_truth import HeaderTruth, header_truth
from analysis.theory import over_admission_bound
from analysis.worst_case import WorstCase, worst_case
from contract.run_info import RunPolicy
from contract.schema import JUDGE_LOG_COLUMNS
from harness.sim.fingerprint import Fit

from .endpoint import CapReached, Endpoint, JudgeError
from .hunt import EDGES, Hunt, NoLimit, fingerprint_of

EDGE_MODELS = ("fixed_window", "limits_fixed_window")
"""Windows whose edge two bursts cross for 2L (2L - 1 where a key's first request opened the
window): aligned to the clock, or opened by a key's first request. A sliding counter's or a ring's
bound of 2L is not reached by bursts at one edge, so a hunt that found less than it is no miss."""
NEAR_MISSES = 2
"""A fixed window whose fit misses at most this many decisions more than the best is still a
suspect: a first-hit try whose burst spilled (a refusal where a new window opens, on a busy
machine) makes such a window fit a little worse than a sliding log, and only another try tells."""
AIMED_TRIES = 3
"""Aimed tries at most after the first hunt: again at an edge no try landed at as aimed
(``Hunt.landed``: a first-hit window the fingerprint cannot tell from a sliding log until a
first-hit try lands, and a spilled try leaves the data fitting a sliding log best), and one more
when the worst case found is short of a fitted window's 2L (``Verdict.short``), each at the pace
the latest burst achieved (a machine busy since the learning sends slower than the learned pace,
and a burst aimed at that pace spills past the edge)."""


@dataclass
class Verdict:
    fits: list[Fit]
    worst: WorstCase
    truth: HeaderTruth
    roles: Counter
    seconds: float
    cut: CapReached | None
    """The bound (requests, time) that ended the hunt early: the worst case may be higher."""

    @property
    def best(self) -> Fit:
        return self.fits[0]

    @property
    def ratio(self) -> float:
        return self.worst.admitted / self.best.policy.limit

    @property
    def short(self) -> set[str]:
        """The edge models (``EDGE_MODELS``) whose 2L the worst case found is short of, among the
        best fit and fixed windows within ``NEAR_MISSES`` of it: 2L at a window shared by every
        key, 2L - 1 where a key's first request opens its window (the opener is a window earlier).
        One request short is a burst a busy machine spilled past the edge."""
        near = [f for f in self.fits if f.model in EDGE_MODELS and f.agreed >= self.best.agreed - NEAR_MISSES]
        return {f.model for f in near
                if self.worst.admitted < 2 * max(1, round(f.policy.limit)) - (f.model == "limits_fixed_window")}

    @property
    def bound(self) -> float | None:
        """The fitted model's own bound on admitted cost in any W, as a multiple of L."""
        p = self.best.policy
        return over_admission_bound(self.best.model, RunPolicy(p.limit, p.window_s, p.effective_burst), {})


def judge(endpoint: Endpoint, max_wait_s: float) -> Verdict:
    """Learn, fingerprint, hunt both edges at the fitted L and W (until the request cap), judge all."""
    hunt = Hunt(endpoint, max_wait_s)
    start = endpoint.now()
    try:
        pace = hunt.learn()
    except CapReached as cut:
        if all(s.answer.allowed for s in endpoint.log):
            raise NoLimit(f"no limit found within {len(endpoint.log)} requests: {cut.bound} reached "
                          f"(raise {cut.flag})") from None
        raise JudgeError(f"{cut.bound} was reached after {len(endpoint.log)} requests, before the window was learned; "
                         f"raise {cut.flag}") from None
    first = fingerprint_of([s.answer for s in endpoint.log])[0]
    try:
        hunt.first_hit_edge(max(1, round(first.policy.limit)), first.policy.window_s, pace,
                            meanwhile=first.policy.window_s)
        short_tried = False
        for _ in range(AIMED_TRIES):
            verdict = verdict_of(endpoint, start)
            short = set() if short_tried else verdict.short
            missed = [edge for edge in EDGES if edge not in hunt.landed]
            if not short and not missed:
                break
            limit, window = max(1, round(verdict.best.policy.limit)), verdict.best.policy.window_s
            pace = hunt.pace(pace, limit, window)
            edge = ("first-hit" if "limits_fixed_window" in short else "clock") if short else missed[0]
            hit = (hunt.first_hit_edge if edge == "first-hit" else hunt.aligned_edge)(limit, window, pace)
            short_tried = short_tried or (bool(short) and hit)
    except CapReached as cut:
        return verdict_of(endpoint, start, cut)
    return verdict_of(endpoint, start)


def verdict_of(endpoint: Endpoint, start: float, cut: CapReached | None = None) -> Verdict:
    answers = [s.answer for s in endpoint.log]
    fits = fingerprint_of(answers)
    return Verdict(fits, worst_case(answers, fits[0].policy.window_s), header_truth(answers),
                   Counter(s.role for s in endpoint.log), endpoint.now() - start, cut)


def clock(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%H:%M:%S.%f")[:-3]


def render(v: Verdict, url: str, log_path: str) -> list[str]:
    """What the terminal shows, one finding a line."""
    best, w, truth = v.best, v.worst, v.truth
    lines = [f"judged {url} in {v.seconds:.1f} s with {sum(v.roles.values())} requests "
             f"({', '.join(f'{role} {n}' for role, n in v.roles.most_common())}), each probe on a key of its own",
             f"fingerprint: {best.sentence()}"]
    if len(v.fits) > 1 and v.fits[1].model not in best.alike:
        lines.append(f"  next best: {v.fits[1].model} {v.fits[1].agreement:.1%}")
    bound = f"; {best.model}'s bound {v.bound:.2f}x" if v.bound is not None else ""
    lines.append(f"worst case: {w.admitted} admitted to one key within {w.span_s:.3f} s (< W = "
                 f"{best.policy.window_s:g} s): {v.ratio:.2f}x L = {best.policy.limit:g}{bound}; evidence: key "
                 f"{w.key}, first sent {clock(w.first_sent)}, last answered {clock(w.last_done)} UTC")
    if v.cut is not None:
        lines.append(f"  {v.cut.bound} ended the hunt early: the worst case may be higher (raise {v.cut.flag})")
    forms = ", ".join(f"{form} {n}" for form, n in truth.forms.most_common() if form != "none") or "none"
    lines.append(f"header truth: limit fields in {forms} answers; Retry-After {truth.retry_after.text()}; "
                 f"remaining {truth.remaining.text()}; reset {truth.reset.text()}"
                 + (f" (quota back up to {truth.reset_early_s:.2f} s before it said)" if truth.reset_early_s else ""))
    lines += [f"  broken: {why}" for tally in (truth.retry_after, truth.remaining, truth.reset) for why in tally.evidence]
    lines += [f"  malformed: {finding}" for finding in truth.letter()]
    lines.append(f"client log: {log_path}")
    return lines


def measurement(endpoint: Endpoint, v: Verdict | None, error: str | None = None) -> dict[str, Any]:
    """The session as ``judge --json`` writes it: what was sent and answered, the header truth of
    those answers, and the verdict, or the error that ended the session (its partial measurement kept)."""
    answers = [s.answer for s in endpoint.log]
    truth = v.truth if v is not None else header_truth(answers)
    doc: dict[str, Any] = {
        "error": error, "requests": len(answers), "roles": dict(Counter(s.role for s in endpoint.log)),
        "statuses": {str(status): n for status, n in sorted(Counter(a.status for a in answers).items())},
        "header_truth": {"said": dict(truth.forms), "malformed": truth.letter(),
                         **{name: {"kept": t.kept, "checked": t.kept + t.broken}
                            for name, t in (("retry_after", truth.retry_after), ("remaining", truth.remaining),
                                            ("reset", truth.reset))}},
        "verdict": None}
    if v is not None:
        p = v.best.policy
        doc["verdict"] = {"model": v.best.model, "limit": p.limit, "window_s": p.window_s, "burst": p.effective_burst,
                          "agreement": v.best.agreement, "worst_admitted": v.worst.admitted, "worst_span_s": v.worst.span_s,
                          "worst_key": v.worst.key, "worst_ratio": v.ratio, "seconds": round(v.seconds, 3),
                          "cut_short_by": None if v.cut is None else v.cut.bound}
    return doc


def client_log(endpoint: Endpoint) -> str:
    """Every request the session sent, with its role and source address, as CSV."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(JUDGE_LOG_COLUMNS)
    for s in endpoint.log:
        a, f = s.answer, s.answer.fields
        writer.writerow([s.role, a.key, s.address, f"{a.sent:.6f}", f"{a.done:.6f}", a.status, f.retry_after_s,
                         f.limit, f.window_s, f.remaining, f.reset_s, f.form])
    return out.getvalue()
