"""Were the limit fields true? Three promises an answer makes, checked against what the same key
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

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

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
    retry_after: Tally = field(default_factory=Tally)
    remaining: Tally = field(default_factory=Tally)
    reset: Tally = field(default_factory=Tally)
    reset_early_s: float = 0.0
    """The most a quota came back before the reset said (a cautious, not a false, promise)."""


def by_key(answers: Iterable[Answer]) -> dict[str, list[Answer]]:
    keyed: dict[str, list[Answer]] = defaultdict(list)
    for a in sorted(answers, key=lambda a: a.sent):
        keyed[a.key].append(a)
    return keyed


def check_retry_after(answers: Sequence[Answer], tally: Tally) -> None:
    """One check per retry: the first request sent at or after a refusal's done + Retry-After,
    with nothing admitted between (an admitted one would have spent the quota it was promised)."""
    checked: set[int] = set()
    for i, a in enumerate(answers):
        if a.allowed or a.fields.retry_after_s is None:
            continue
        due = a.done + a.fields.retry_after_s
        j = next((j for j in range(i + 1, len(answers)) if answers[j].sent >= due), None)
        if j is None or j in checked or any(b.allowed for b in answers[i + 1:j]):
            continue
        checked.add(j)
        retry = answers[j]
        tally.add(retry.allowed, f"{a.key}: refused at {a.done:.3f} with Retry-After {a.fields.retry_after_s:g}, "
                                 f"the retry at {retry.sent:.3f} refused too")


def check_remaining(answers: Sequence[Answer], tally: Tally) -> None:
    """An answer saying r remain, nothing of the key in flight across it: its next r are admitted."""
    for i, a in enumerate(answers):
        r = a.fields.remaining
        if not r or any(b.sent < a.done < b.done for b in answers[:i]) or \
                any(b.sent < a.done for b in answers[i + 1:]):
            continue
        promised = answers[i + 1:i + 1 + int(r)]
        if promised:
            refused = next((b for b in promised if not b.allowed), None)
            tally.add(refused is None, f"{a.key}: {r:g} remaining at {a.done:.3f}, "
                                       f"refused at {refused.sent:.3f}" if refused else "")


def check_reset(answers: Sequence[Answer], truth: HeaderTruth) -> None:
    """After a refusal saying reset t: the first request sent at or after done + t (nothing admitted
    between) is admitted with the whole quota; an admission before that measures how early."""
    for i, a in enumerate(answers):
        if a.allowed or a.fields.reset_s is None:
            continue
        due = a.done + a.fields.reset_s
        later = answers[i + 1:]
        early = next((b for b in later if b.allowed), None)
        if early is not None and early.sent < due:  # admitted before the reset: it spent the quota
            if early.done < due:
                truth.reset_early_s = max(truth.reset_early_s, due - early.done)
            continue
        first = next((b for b in later if b.sent >= due), None)
        if first is None:
            continue
        f = first.fields
        whole = f.remaining is None or f.limit is None or f.remaining >= f.limit - 1
        truth.reset.add(first.allowed and whole, f"{a.key}: reset {a.fields.reset_s:g} s at {a.done:.3f}, at "
                                                 f"{first.sent:.3f} {'refused' if not first.allowed else 'not whole'}")


def header_truth(answers: Iterable[Answer]) -> HeaderTruth:
    """The three checks over every key's answers."""
    truth = HeaderTruth()
    for keyed in by_key(answers).values():
        truth.forms.update(a.fields.form for a in keyed)
        check_retry_after(keyed, truth.retry_after)
        check_remaining(keyed, truth.remaining)
        check_reset(keyed, truth)
    return truth
