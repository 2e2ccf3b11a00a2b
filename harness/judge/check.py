"""Predict, then check; and a worst case that does not trust the model.

After the learning and the edge hunts (``hunt.py``), the judge sends traffic of shapes the
learning never sent, on keys of their own, interleaved on one clock (``run_scripts``):

- **explored** (fitted on, with the learning): one key emptied by a burst, then rested for idle
  gaps of 1/8, 1/4, 1/2 and 3/4 of the quota's full return and burst after each (how much came back
  after how long idle); when a gap shorter than the full return brought a whole burst back, the
  shortest such gap is bisected to 9% (the idle time or the block a stateful limiter has), and
  from 3/4 to 15/16 of it when every gap brought a part back and the late key below all of it;
  and a key sent a ramp, from 1.5x the longest a key took to be admitted again over L apart,
  each request 5% sooner than the last, until refused (what W is when a burst never tells: a
  block or counted refusals hold a key's return back past its window);
- **held back** (never fitted on: predicted, then compared request by request; shaped by the
  learning's fit and sent beside the explored keys): steady at 1.5x the fitted rate for 2
  windows; bursts separated by idle gaps of 3/16, 5/8 and 1.5 of the full return; a burst right
  after a run of refusals; a burst after 15/16 of the return (the late key: a bucket forgotten
  later than 3/4 of its return comes back whole there, where no explored gap reaches); and, once
  every model is fitted, the worst-case hunt below. One key each: a session stays within 600
  requests at L = 20 (a live Traefik session with a second steady key and a second gap key sent
  686), and each key more costs a burst of L or more.

The worst-case hunt is model-free first: it repeats, over one window of the claimed length (the
fitted one when none is claimed), a burst until refused and the idle gap that the explored key
showed brings the most back per second (``best_gap``), unless the fitted model predicts that
another burst, gap, start on the clock or span admits more (``aim.py``); the steady over-rate
keys and the edge hunts are searched too. The worst case is the most admitted to one key in any
window of that length, over every request of the session (``analysis.worst_case``).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Generator
from dataclasses import dataclass, field

from analysis.header_truth import Answer

from .endpoint import Endpoint

Script = Generator[float, Answer, None]
"""A key's traffic: yields when it wants its next request sent (epoch seconds; 0: at once, the
burst it is in goes on), receives the answer."""

EXPLORE_GAPS = (1 / 8, 1 / 4, 1 / 2, 3 / 4)
"""Idle gaps of the explored key, as shares of the quota's full return."""
HELD_GAPS = ((3 / 16, 5 / 8, 1.5),)
"""Idle gaps of the held-back gap keys, as shares of the full return: none an explored one, the
last past the return (a bucket a ttl forgets comes back full)."""
STEADY = ((1.5, 2.0),)
"""Held-back steady keys: (multiple of the fitted rate, windows): over the rate for two windows,
where a sliding log admits 2/3, a bucket its rate, and a counter of refusals less."""
RAMP_STEP, RAMP_MAX = 0.05, 150
"""The explored ramp: each request 5% sooner after the last, 150 requests at most."""
RAMP_FROM = 1.5
"""The ramp starts this many times the longest readmission (or the full return) over L apart: no
W is longer than a key's return, so the first refusal lies 8 steps ahead at least (at 2x, 14: a
live HAProxy session's ramp was its longest phase, 37 s)."""
BISECT_TO = 0.09
"""The shortest gap that brings a whole burst back is bisected until it is known within 9%: the
middle of the last step is then within 5% of the truth (at 10% a forgotten bucket's 0.627 s read
0.594 s; 3% cost a live session at W = 2 s two more seconds)."""
WHOLE = 0.9
"""A burst after a gap is whole when it admitted at least 90% of the emptied key's first burst
(past 4/5 of the full return, more: ``whole_at``)."""
LATE = 15 / 16
"""The late key's one idle gap, as a share of the full return: a bucket forgotten after
3/4 of its return (no explored gap is longer) comes back whole there, a plain one 15/16 of the
way; ``whole_at`` tells them apart. Later still, what forgetting adds is under 1/16 of a burst a
cycle: a bucket of 7 per 1 s forgotten after 0.777 s let 15 through in a second, and the judge,
before this key, found 13 (a plain bucket's 2L - 1); forgotten after 0.95 s it lets 14."""


def whole_at(gap: float, recovery_s: float, first: int) -> float:
    """How many a burst ``gap`` after a key was emptied must admit to count as whole: 90% of its
    first burst, and where a plain bucket refills more than that over the gap, halfway from what
    it refills to all of it (``recovery_s`` inf: the gap is no share of a known return)."""
    share = gap / recovery_s if gap < recovery_s else 0.0
    return max(WHOLE, (1 + share) / 2) * first


@dataclass
class Sweep:
    """What the explored key showed: (gap, admitted after it), the first burst, the shortest gap
    found bringing a whole burst back (None: none shorter than the full return) and the longest
    shorter one that did not (``low``), a burst's pace."""

    first: int = 0
    after: list[tuple[float, int]] = field(default_factory=list)
    whole_gap: float | None = None
    pace: float = 0.0
    low: float = 0.0
    late: tuple[int, int] | None = None
    """The late key's first burst and the one after ``LATE`` of the return (``late_gap``)."""

    @property
    def in_part(self) -> bool:
        """Whether the last burst after a gap got more than half the first back (a bucket's refill, not a window)."""
        return bool(self.after) and self.first / 2 < self.after[-1][1]

    @property
    def whole_from(self) -> float | None:
        """Where between ``low`` and ``whole_gap`` a whole burst starts coming back: their middle,
        within half the bisection's last step of the truth (the shortest gap would overstate an
        idle time by up to the whole step: 0.75 s for a ttl of 0.703 s)."""
        return None if self.whole_gap is None else (self.low + self.whole_gap) / 2 if self.low else self.whole_gap


def burst(most: int, at: float = 0.0) -> Generator[float, Answer, list[Answer]]:
    """Send (the first at ``at``) until a refusal or ``most`` admitted."""
    answers: list[Answer] = []
    while sum(a.allowed for a in answers) < most:
        answers.append((yield at if not answers else 0.0))
        if not answers[-1].allowed:
            break
    return answers


def explore_gaps(recovery_s: float, most: int, sweep: Sweep, shares: tuple[float, ...] = EXPLORE_GAPS) -> Script:
    """The explored key: emptied, then bursts after each gap of ``shares`` (``EXPLORE_GAPS``); the
    shortest gap that brought a whole burst back bisected to ``BISECT_TO`` (from the last gap that
    did not). Only the bisection asks ``probe`` to send a whole burst again when it came a full
    return after the key was last whole: among the shares, such a burst is what tells a block
    held from its trip (a fixed block of 4.77 s came back whole after gaps of 0.6-3.6 s summing
    past it) from a plain limit with the same full return. When that burst was the only whole one
    and came a full return after the key was last whole, and the burst before it got less than
    half back (a window, not a bucket), a burst after the longest gap short of the full return is
    sent from a key started afresh and, whole, the gaps below it are bisected (an idle time past
    3/4 of it). When every gap brought a part back and the late key (``late_gap``) all of it, the
    gaps between 3/4 and ``LATE`` of the return are bisected (a bucket forgotten late)."""
    first = yield from burst(most)
    sweep.first = sum(a.allowed for a in first)
    sweep.pace = (first[-1].done - first[0].sent) / len(first)
    if first[-1].allowed:
        return
    last, opened, low, ended, partial = first[-1], first[0].sent, 0.0, False, False
    for share in shares:
        partial = sweep.in_part
        ended = last.done + share * recovery_s - opened >= recovery_s
        whole, last, opened = yield from probe(most, share * recovery_s, last, opened, math.inf, sweep)
        if whole:
            sweep.whole_gap = share * recovery_s
            break
        low = sweep.low = share * recovery_s
    # every gap brought a part back (a bucket), and the late key all of it: forgotten past 3/4
    late = sweep.whole_gap is None and sweep.in_part and sweep.late is not None \
        and sweep.late[1] >= whole_at(LATE * recovery_s, recovery_s, sweep.late[0])
    if late:
        sweep.whole_gap = LATE * recovery_s
    found = sweep.whole_gap
    last, opened, low = yield from bisect(most, recovery_s, sweep, last, opened, low)
    latest = recovery_s * (1 - BISECT_TO / 2) - sweep.pace * (sweep.first + 1)
    if found is None or late or not ended or partial or sweep.whole_gap != found or latest <= found:
        return
    # the one whole burst came a full return after the key was last whole, and the burst before
    # it got less than half back (a window: a bucket's 95% is whole by ``WHOLE``): the window had
    # ended, or the key was forgotten (a window of 2 s forgotten after 1.757 s came back whole
    # after 1.5 s as it ended, and its idle time read 1.44 s). A burst after the longest gap that
    # still ends inside a window opened afresh tells them apart; whole, the gaps below it bisected
    whole, last, opened = yield from probe(most, latest, last, opened, recovery_s, sweep)
    if whole:
        sweep.whole_gap = latest
        yield from bisect(most, recovery_s, sweep, last, opened, low)


def bisect(most: int, recovery_s: float, sweep: Sweep, last: Answer, opened: float,
           low: float) -> Generator[float, Answer, tuple[Answer, float, float]]:
    """The gap between ``low`` (not whole) and ``sweep.whole_gap`` (whole) bisected to ``BISECT_TO``."""
    while sweep.whole_gap is not None and sweep.whole_gap - low > BISECT_TO * sweep.whole_gap:
        gap = (low + sweep.whole_gap) / 2
        whole, last, opened = yield from probe(most, gap, last, opened, recovery_s, sweep)
        if whole:
            sweep.whole_gap = gap
        else:
            low = sweep.low = gap
    return last, opened, low


def probe(most: int, gap: float, last: Answer, opened: float, recovery_s: float,
          sweep: Sweep) -> Generator[float, Answer, tuple[bool, Answer, float]]:
    """A burst ``gap`` after ``last``: whether it came back whole, its last answer, and when the
    key was last seen whole (``opened``). A whole burst ``recovery_s`` or more after ``opened``
    (inf: never) says nothing of the gap (the window the whole burst opened has ended, or a bucket refilled
    over the refused probes: a forgotten window of 0.994 s came back whole after 0.938 s, its
    2 s window over); it starts the key afresh, and the gap is tried once more from it. Whole again
    that long after, the gap and the burst before it outlast the window: not whole (not to be told
    from the window's end)."""
    retried = False
    while True:
        got = yield from burst(most, last.done + gap)
        admitted, start, last = sum(a.allowed for a in got), got[0].sent, got[-1]
        whole = admitted >= whole_at(gap, recovery_s, sweep.first)
        if whole and start - opened >= recovery_s and gap < recovery_s:
            if retried:  # the gap and the burst before it outlast the window (the docstring)
                whole = False
            else:
                opened, retried = start, True
                continue
        sweep.after.append((gap, admitted))
        return whole, last, start if whole else opened


def late_gap(recovery_s: float, most: int, sweep: Sweep) -> Script:
    """The late key (held back): emptied, then a burst after ``LATE`` of the full return (``Sweep.late``)."""
    first = yield from burst(most)
    if first[-1].allowed:
        return
    again = yield from burst(most, first[-1].done + LATE * recovery_s)
    sweep.late = (sum(a.allowed for a in first), sum(a.allowed for a in again))


def steady(start: float, rate: float, seconds: float) -> Script:
    """One request every 1 / ``rate`` s for ``seconds``."""
    n = max(2, math.ceil(rate * seconds))
    for i in range(n):
        yield start + i / rate


def ramp(start: float, spacing: float, most: int, step: float = RAMP_STEP) -> Script:
    """From ``spacing`` apart, each request ``step`` sooner after the last than the one before, until
    the first refusal and ``most`` more requests (or ``RAMP_MAX`` requests): a sliding log of L in
    any W first refuses where L requests first fit inside W, so W is read within ``step``."""
    at, refused, sent = start, None, 0
    while sent < RAMP_MAX and (refused is None or sent < refused + most):
        answer = yield at
        sent += 1
        if refused is None and not answer.allowed:
            refused = sent
        spacing *= 1 - step
        at = answer.done + spacing


def gaps(most: int, lengths: list[float]) -> Script:
    """A burst until refused, then after each idle gap (from the last answer) another."""
    last = (yield from burst(most))[-1]
    for gap in lengths:
        last = (yield from burst(most, last.done + gap))[-1]


def after_refusals(most: int, knocks: int, every: float) -> Script:
    """A burst until refused, ``knocks`` more requests ``every`` s apart, then a burst right after."""
    last = (yield from burst(most))[-1]
    for _ in range(knocks):
        last = yield last.done + every
    yield from burst(most, last.done)


def repeat(most: int, gap: float, window_s: float, at: float = 0.0, windows: int = 1,
           every: float | None = None) -> Script:
    """The worst-case hunt: a burst until refused (from ``at``; 0: at once), the idle ``gap``,
    again, over ``windows`` windows and a gap; with ``every``, where the next burst would start
    past the windows, one request every ``every`` s until they end instead (a bucket's refill
    after the last burst a gap lets in)."""
    first = yield from burst(most, at)
    start, last = first[0].sent, first[-1]
    end = start + windows * window_s
    while last.done < end:
        if every is not None and last.done + gap >= end:
            while last.done + every < end:
                last = yield last.done + every
            return
        last = (yield from burst(most, last.done + gap))[-1]


def paced(most: int, cycle: float, window_s: float, at: float = 0.0, windows: int = 1) -> Script:
    """The worst-case hunt on the clock: a burst until refused every ``cycle`` s from the first
    (``at``; 0: at once), over ``windows`` windows: each burst starts when it is due, however long
    the last one took (a limiter keeping time in whole seconds is met at the same point of each)."""
    first = yield from burst(most, at)
    start, k = first[0].sent, 1
    while k * cycle <= windows * window_s:
        yield from burst(most, start + k * cycle)
        k += 1


def best_gap(sweep: Sweep, recovery_s: float) -> float:
    """The idle gap that brought the most back per second of the cycle it makes (gap and burst),
    as the explored key measured it; the full return when nothing came back sooner."""
    cycles = [(n / (gap + n * sweep.pace), gap) for gap, n in sweep.after if n > 0]
    if sweep.whole_gap is not None:
        cycles.append((sweep.first / (sweep.whole_gap + sweep.first * sweep.pace), sweep.whole_gap))
    return max(cycles)[1] if cycles else recovery_s


def run_scripts(endpoint: Endpoint, scripts: list[tuple[int, str, Script]],
                stop: Callable[[], bool] = lambda: False,
                names: dict[str, tuple[int, str]] | None = None) -> dict[str, tuple[int, str]]:
    """Run keys' scripts on one clock: the request due first goes first; a burst under way (due 0)
    goes on before anything else. ``stop``: checked before each request. Returns each key's name
    as the endpoint's answers give it, with its number and role (``names``, filled as they come:
    kept when a bound ends the run)."""
    names = {} if names is None else names
    due: dict[int, tuple[float, str, Script]] = {}
    for key, role, script in scripts:
        with contextlib.suppress(StopIteration):
            due[key] = (next(script), role, script)
    while due and not stop():
        key = min(due, key=lambda k: (due[k][0], k))
        at, role, script = due[key]
        endpoint.sleep_until(at)
        answer = endpoint.send(key, role)
        names[answer.key] = (key, role)
        try:
            due[key] = (script.send(answer), role, script)
        except StopIteration:
            del due[key]
    return names
