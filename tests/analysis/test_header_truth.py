"""The three promises of the limit fields, on hand-computed client-side sequences."""

from __future__ import annotations

from analysis.header_truth import Answer, header_truth
from contract.limit_headers import LimitFields


def ans(sent: float, status: int, **fields: float) -> Answer:
    return Answer("k", sent, sent + 0.01, status, LimitFields(form="ietf-list", **fields))


def test_a_truthful_fixed_window_keeps_every_promise():
    # L = 2 per 1 s window opened at 0: two admitted, a refusal saying 0.98 s, the retry at 1.0
    answers = [ans(0.0, 200, limit=2, remaining=1, reset_s=0.99), ans(0.1, 200, limit=2, remaining=0, reset_s=0.89),
               ans(0.2, 429, limit=2, remaining=0, reset_s=0.79, retry_after_s=0.79),
               ans(1.0, 200, limit=2, remaining=1, reset_s=0.99)]
    truth = header_truth(answers)
    assert (truth.retry_after.kept, truth.retry_after.broken) == (1, 0)
    assert (truth.remaining.kept, truth.remaining.broken) == (1, 0)  # the 1 at 0.0 (nothing follows the 1 at 1.0)
    assert (truth.reset.kept, truth.reset.broken) == (1, 0)


def test_a_retry_after_too_short_and_a_remaining_overstated_are_caught_with_evidence():
    answers = [ans(0.0, 200, remaining=3), ans(0.1, 200, remaining=2), ans(0.2, 429, retry_after_s=0.5, reset_s=0.5),
               ans(0.8, 429, retry_after_s=0.5)]
    truth = header_truth(answers)
    assert (truth.retry_after.kept, truth.retry_after.broken) == (0, 1)
    assert "Retry-After 0.5" in truth.retry_after.evidence[0]
    assert (truth.remaining.kept, truth.remaining.broken) == (0, 2)
    assert (truth.reset.kept, truth.reset.broken) == (0, 1)


def test_a_reset_that_comes_early_is_measured_not_broken():
    answers = [ans(0.0, 429, reset_s=5.0), ans(2.0, 200, remaining=9, limit=10)]
    truth = header_truth(answers)
    assert truth.reset.kept + truth.reset.broken == 0
    assert abs(truth.reset_early_s - 3.0) < 1e-9


def test_a_reset_that_does_not_restore_the_whole_quota_is_broken():
    answers = [ans(0.0, 429, reset_s=1.0), ans(1.5, 200, remaining=3, limit=10)]
    assert header_truth(answers).reset.broken == 1


def test_promises_are_never_checked_across_requests_in_flight():
    a = Answer("k", 0.0, 0.5, 200, LimitFields(remaining=1, form="x-ratelimit"))
    b = Answer("k", 0.1, 0.2, 429)  # sent before a was answered: it may have been decided first
    assert header_truth([a, b]).remaining.text() == "n/a (never checkable)"


def test_the_worst_case_counts_only_runs_proven_inside_one_window():
    from analysis.worst_case import worst_case
    # key k: 3 admitted in [0, 0.51], a refusal, 2 more at 0.95 and 1.2 (answered 0.01 s later)
    answers = [ans(0.0, 200), ans(0.25, 200), ans(0.5, 200), ans(0.6, 429), ans(0.95, 200), ans(1.2, 200)]
    assert worst_case(answers, 1.0).admitted == 4  # 0.25 .. 1.21: 0.96 s; 0.0 .. 0.96 is 0.96 s too
    assert worst_case(answers, 0.9).admitted == 3  # every run of 4 spans 0.96 s
    edge = worst_case(answers, 1.0)
    assert (edge.key, edge.first_sent, round(edge.last_done, 9)) == ("k", 0.0, 0.96)  # the evidence: the first run
    other = Answer("other", 0.0, 0.01, 200)
    assert worst_case([*answers, other], 0.5).key == "k"


def test_a_request_admitted_across_the_reset_leaves_the_reset_unchecked():
    # reset due at 1.01; a request sent at 1.0 and answered at 1.02 spent quota: the next is not judged
    answers = [ans(0.0, 429, reset_s=1.0), Answer("k", 1.0, 1.02, 200), ans(1.05, 200, remaining=8, limit=10)]
    truth = header_truth(answers)
    assert truth.reset.kept + truth.reset.broken == 0 and truth.reset_early_s == 0


def test_a_retry_is_not_judged_when_an_admission_before_it_spent_the_quota():
    # Retry-After 0.5 overstated: admitted at 0.2 spends the one slot, the retry at 0.6 refused
    answers = [ans(0.0, 429, retry_after_s=0.5), ans(0.2, 200), ans(0.6, 429)]
    tally = header_truth(answers).retry_after
    assert tally.kept + tally.broken == 0
