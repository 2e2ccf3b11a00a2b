"""Were the limit fields true? Every value read by the letter first (``contract.limit_headers``:
one that breaks it is a finding, counted here by the answers that sent it, and promises nothing),
then three promises an answer makes, checked against what the same key
was answered next, from the client's side only (any endpoint, no server log needed).

- **Retry-After**: the first request sent at least Retry-After after a refusal was answered is admitted;
- **remaining r**: the next r requests of the key (none in flight across the answer) are admitted
  (a quota never shrinks with time alone, so the promise has no deadline);
- **reset t**: the first request sent at least t after the answer is admitted with the whole quota
  (remaining = limit - 1 where the answer says both), and when the quota came back earlier the
  error is measured.

Times are the client's: an answer's decision happened between its ``sent`` and ``done``, so a wait
is counted from ``done`` (the server waited at least that long) and a request is inside a window
only when it was ``done`` before the window could have ended: every check errs towards the limiter.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate

from contract.limit_headers import LimitFields

REFUSED = 429


@dataclass(frozen=True)
class Answer:
    """One request as the client saw it: its key, when it was sent and answered, status, fields."""

    key: str
    sent: float
    done: float
    status: int
    fields: LimitFields = field(default_factory=LimitFields)

    @property
    def allowed(self) -> bool:
        return self.status != REFUSED


@dataclass
class Tally:
    """Kept and broken promises of one kind, with the first broken ones as evidence."""

    kept: int = 0
    broken: int = 0
    evidence: list[str] = field(default_factory=list)

    def add(self, ok: bool, why: str) -> None:
        if ok:
            self.kept += 1
        else:
            self.broken += 1
            if len(self.evidence) < 3:
                self.evidence.append(why)

    def text(self) -> str:
        checked = self.kept + self.broken
        return "n/a (never checkable)" if not checked else f"{self.kept} of {checked} kept"


@dataclass
class HeaderTruth:
    forms: Counter = field(default_factory=Counter)
    """Answers by what they said (``LimitFields.said``: a quota's form, ``retry-after``, ``malformed``, ``none``)."""
    findings: Counter = field(default_factory=Counter)
    """Each value that broke the letter, with how many answers sent it."""
    malformed: int = 0
    """Answers with at least one such value."""
    retry_after: Tally = field(default_factory=Tally)
    remaining: Tally = field(default_factory=Tally)
    reset: Tally = field(default_factory=Tally)
    reset_early_s: float = 0.0
    """The most a quota came back before the reset said (a cautious, not a false, promise)."""

    def letter(self) -> list[str]:
        """The findings, most sent first, each with its count: the one verdict on the letter that
        ``judge``, ``validate --url`` and a campaign's summary all give."""
        return [f"{finding} ({n} answer{'s' if n > 1 else ''})" for finding, n in self.findings.most_common()]


def by_key(answers: Iterable[Answer]) -> dict[str, list[Answer]]:
    keyed: dict[str, list[Answer]] = defaultdict(list)
    for a in sorted(answers, key=lambda a: a.sent):
        keyed[a.key].append(a)
    return keyed


class _Index:
    """One key's answers in the order sent, indexed so that each check is a lookup, not a scan
    (a campaign's key has a hundred thousand answers): admitted counts before each place, the
    refused places, the next admitted place from each, the latest answer before each."""

    def __init__(self, answers: Sequence[Answer]) -> None:
        self.answers = answers
        self.sent = [a.sent for a in answers]
        self.admitted_before = [0, *accumulate(int(a.allowed) for a in answers)]
        self.refused = [i for i, a in enumerate(answers) if not a.allowed]
        n = len(answers)
        self.next_admitted = [n] * (n + 1)
        for i in range(n - 1, -1, -1):
            self.next_admitted[i] = i if answers[i].allowed else self.next_admitted[i + 1]
        self.latest_done_before = [-math.inf, *accumulate((a.done for a in answers), max)]

    def first_sent_from(self, t: float, lo: int) -> int | None:
        """The first answer at or after place ``lo`` sent at or after ``t``."""
        j = bisect_left(self.sent, t, lo=lo)
        return j if j < len(self.sent) else None

    def admitted_between(self, lo: int, hi: int) -> bool:
        """Whether any answer in places [lo, hi) was admitted."""
        return self.admitted_before[hi] > self.admitted_before[lo]

    def first_refused(self, lo: int, hi: int) -> int | None:
        """The first refused place in [lo, hi)."""
        k = bisect_left(self.refused, lo)
        return self.refused[k] if k < len(self.refused) and self.refused[k] < hi else None


def check_retry_after(index: _Index, tally: Tally) -> None:
    """One check per retry: the first request sent at or after a refusal's done + Retry-After,
    with nothing admitted between (an admitted one would have spent the quota it was promised)."""
    answers, checked = index.answers, set()
    for i in index.refused:
        a = answers[i]
        if a.fields.retry_after_s is None:
            continue
        j = index.first_sent_from(a.done + a.fields.retry_after_s, i + 1)
        if j is None or j in checked or index.admitted_between(i + 1, j):
            continue
        checked.add(j)
        retry = answers[j]
        tally.add(retry.allowed, f"{a.key}: refused at {a.done:.3f} with Retry-After {a.fields.retry_after_s:g}, "
                                 f"the retry at {retry.sent:.3f} refused too")


def check_remaining(index: _Index, tally: Tally) -> None:
    """An answer saying r remain, nothing of the key in flight across it: its next r are admitted."""
    answers = index.answers
    for i, a in enumerate(answers):
        r = a.fields.remaining
        if not r or index.latest_done_before[i] > a.done or (i + 1 < len(answers) and answers[i + 1].sent < a.done):
            continue
        end = min(len(answers), i + 1 + int(r))
        if end > i + 1:
            refused = index.first_refused(i + 1, end)
            tally.add(refused is None, "" if refused is None else
                      f"{a.key}: {r:g} remaining at {a.done:.3f}, refused at {answers[refused].sent:.3f}")


def check_reset(index: _Index, truth: HeaderTruth) -> None:
    """After a refusal saying reset t: the first request sent at or after done + t (nothing admitted
    between) is admitted with the whole quota; an admission before that measures how early."""
    answers = index.answers
    for i in index.refused:
        a = answers[i]
        if a.fields.reset_s is None:
            continue
        due = a.done + a.fields.reset_s
        k = index.next_admitted[i + 1]
        if k < len(answers) and answers[k].sent < due:  # admitted before the reset: it spent the quota
            if answers[k].done < due:
                truth.reset_early_s = max(truth.reset_early_s, due - answers[k].done)
            continue
        j = index.first_sent_from(due, i + 1)
        if j is None:
            continue
        first = answers[j]
        f = first.fields
        whole = f.remaining is None or f.limit is None or f.remaining >= f.limit - 1
        truth.reset.add(first.allowed and whole, f"{a.key}: reset {a.fields.reset_s:g} s at {a.done:.3f}, at "
                                                 f"{first.sent:.3f} {'refused' if not first.allowed else 'not whole'}")


def header_truth(answers: Iterable[Answer]) -> HeaderTruth:
    """The three checks over every key's answers."""
    truth = HeaderTruth()
    for keyed in by_key(answers).values():
        truth.forms.update(a.fields.said for a in keyed)
        truth.findings.update(finding for a in keyed for finding in a.fields.findings)
        truth.malformed += sum(bool(a.fields.findings) for a in keyed)
        index = _Index(keyed)
        check_retry_after(index, truth.retry_after)
        check_remaining(index, truth.remaining)
        check_reset(index, truth)
    return truth
