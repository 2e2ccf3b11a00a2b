"""Learn a key's window from outside, then aim bursts at its edges.

Every probe is a fresh key (``Endpoint.send`` numbers them), so no quota under test is spent
unseen. Learning: a fresh key is saturated (how many before its first refusal), probed at growing
intervals until admitted again (how long its quota took to come back), then saturated again (did
it come back whole, a window, or a token at a time, a refill); a second key repeats it at another
phase, probing finely where the first came back: clock-aligned windows come back at the same
clock edges, windows opened by a key's first request a whole W after it. The fingerprint of
those decisions names the window the hunt aims at:
- a clock edge: L just before a multiple of W since the epoch, L just after;
- a first-hit edge: one request opens a key's window, L-1 just before its end, L just after;
both are always tried (the hunt does not trust one fingerprint), each on its own key.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from analysis.header_truth import Answer, header_truth
from harness.sim.fingerprint import MODELS, STATEFUL_MODELS, Fit, Seen, fingerprint

from .endpoint import Endpoint, JudgeError

GROWTH = 1.05
"""Each probe waits 5% longer than the last since the key's first request: a window of W is
found within 5% in about 60 probes whatever W is; the second key narrows it to 0.5%."""
FINE_STEPS = 10
LATE = 0.8
"""A quota back later than this share of the window fitted to it: refusals counted (``Hunt.learn``)."""
PATIENCE = 0.7
"""A key refused for this share of ``--max-wait`` is then probed at most every half of what is
left of it: a block that each refused probe extends (``extended_block``) comes back only when left
alone that long, which probes 5% apart never do. Late enough for a counter that counts refusals
(HAProxy's: back after 2 W, probed 5% apart) to come back at 2 W first, at W = 10 s and the
default --max-wait."""
KNOCKED = 1.5
"""The second key is first probed 1.5 times the silence after which the first key came back, and
left alone that long again if refused two such silences past where the first came back: a block
each knock extends is shorter than that silence (the first key came back after it), a window or a
bucket is far from over by then (one refused probe more). A block of 1.42 s at W = 1 s, which the
first key's probes 5% apart only just outgrew at 28 s, had held the second key knocking for 33 s
more (a session of 254 s)."""
MARGIN = 0.04
"""How far from a learned edge a burst stops or starts, as a fraction of W."""


EDGES = ("first-hit", "clock")
"""The two edges hunted: a window opened by a key's first request, one aligned to the clock."""


@dataclass(frozen=True)
class Refill:
    """A key whose quota came back a little: about a token per ``gap`` s, after ``longest`` s."""

    key: int
    gap: float
    longest: float


class NoLimit(JudgeError):
    """No refusal within the requests the cap allows."""


def seen(answers: list[Answer]) -> list[Seen]:
    """The decisions for the fingerprint, each half the fastest round trip before its answer: a
    slow request on loopback is slow before the limiter decides (a new connection, a busy event
    loop picking it up), its answer comes back as fast as any (measured: a token bucket's first
    request taking 0.18 s, dated at its middle, gave the model 0.9 tokens the limiter never had)."""
    fastest = min((a.done - a.sent for a in answers), default=0.0)
    return [Seen(max(a.sent, a.done - fastest / 2), a.key, a.allowed, a.done, a.sent) for a in answers]


class Hunt:
    """One judging session on ``endpoint``, waiting at most ``max_wait_s`` for a quota to return."""

    def __init__(self, endpoint: Endpoint, max_wait_s: float = 30.0, first_burst: int = 400) -> None:
        self.endpoint, self.max_wait_s, self.first_burst = endpoint, max_wait_s, first_burst
        self.keys = 0
        self.refusal: Answer | None = None
        self.achieved = 0.0
        """How long one request of the latest burst took: a busy machine's pace, not the learned one."""
        self.due: list[tuple[float, int]] = []
        """Refill bursts due (when, on which key), sent while the hunt waits (``wait_until``)."""
        self.landed: set[str] = set()
        """The edges (``EDGES``) a try landed at as aimed (``landed``): each must, once, for the worst case to be trusted."""
        self.left_alone: float | None = None
        """The silence after which a key came back once probes 5% apart never let it (``PATIENCE``):
        a block each knock extends; None while every quota came back to the probes."""

    def fresh(self) -> int:
        self.keys += 1
        return self.keys

    def burst(self, key: int, role: str, most: int) -> list[Answer]:
        """Send until a refusal or ``most`` admitted."""
        answers: list[Answer] = []
        while sum(a.allowed for a in answers) < most:
            answers.append(self.endpoint.send(key, role))
            if not answers[-1].allowed:
                break
        if len(answers) > 1:
            self.achieved = (answers[-1].done - answers[0].sent) / len(answers)
        return answers

    def probe_back(self, key: int, t0: float, fine: tuple[float, float] | None = None,
                   quiet: float = 0.0, expect: tuple[float, float] | None = None) -> tuple[float, Answer]:
        """Probe ``key`` until admitted; (when the last refused probe was answered, the admitted one).
        Delays since ``t0`` grow by ``GROWTH`` from ``quiet`` on; inside ``fine`` (delays) they step
        by a tenth of it, and no refill burst due meanwhile (``wait_until``) delays them there.
        ``expect``: when the first key's quota came back (``KNOCKED``)."""
        e = self.endpoint
        refused_at, knocked = e.now(), False
        while True:
            elapsed = e.now() - t0
            step = max(elapsed * (GROWTH - 1), quiet - elapsed)
            finely = fine is not None and fine[0] - step <= elapsed <= fine[1] + (fine[1] - fine[0])
            if finely:
                step = max((fine[1] - fine[0]) / FINE_STEPS, 1e-3)
            elif fine is not None and elapsed < fine[0]:
                step = min(step, fine[0] - elapsed)
            patient = elapsed > PATIENCE * self.max_wait_s
            if patient:
                step = max(step, (1 - PATIENCE) * self.max_wait_s / 2)
            elif expect is not None and elapsed > expect[1] + 2 * (expect[1] - expect[0]):
                # refused well past where the first key came back: its knocks hold this one back (a
                # block each extends); left alone as long as the first key's last silence, it is back
                step, patient = max(step, KNOCKED * (expect[1] - expect[0])), True
            if elapsed + step > self.max_wait_s:
                raise JudgeError(f"no quota came back within {self.max_wait_s:g} s of a key's first request "
                                 "(a window longer than --max-wait?)")
            self.wait_until(t0 + elapsed + step, bursts=not finely)
            answer = e.send(key, "probe")
            if answer.allowed:
                # back when left alone, where knocks held the first key back four times as long
                if patient or (expect is not None and not knocked and elapsed + step < expect[0] / 4):
                    self.left_alone = step
                return refused_at, answer
            refused_at, knocked = answer.done, True

    def wait_until(self, t: float, bursts: bool = True) -> None:
        """Wait until ``t``, sending meanwhile the refill bursts due by then (``bursts``)."""
        while bursts and self.due and self.due[0][0] <= t:
            at, key = self.due.pop(0)
            self.endpoint.sleep_until(at)
            self.burst(key, "learn", self.first_burst)
        self.endpoint.sleep_until(t)

    def learn_key(self, fine: tuple[float, float] | None = None, quiet: float = 0.0,
                  expect: tuple[float, float] | None = None) -> tuple[tuple[float, float], float, Refill | None]:
        """One key saturated, probed until admitted (``probe_back``), saturated again: (when its
        quota came back, between two delays after its first request; how long one request took, a
        burst's pace; the refill to read when the quota came back only a little)."""
        key = self.fresh()
        first = self.burst(key, "learn", self.first_burst)
        if first[-1].allowed:
            raise NoLimit(f"no limit found within {len(first)} requests of one key")
        self.refusal, t0 = first[-1], first[0].sent
        refused_at, back = self.probe_back(key, t0, fine, quiet, expect)
        again = self.burst(key, "learn", max(2, len(first) // 2))
        refill = None
        if sum(a.allowed for a in again) < len(first) // 2:
            refill = Refill(key, back.done - first[-1].done, back.done - t0)
        pace = (first[-1].done - t0) / len(first)
        return (refused_at - t0, back.done - t0), pace, refill

    def refill(self, refill: Refill, cap: float = math.inf) -> None:
        """The quota came back a little (about a token per ``gap``): the key rests 3 gaps, then 6,
        saturated after each; the rests at most half a span, then the span: the quota's return or
        ``cap`` if shorter, at least 1 s. A bucket admits its refill rate times the rest, which
        the fingerprint reads off these answers. Bursts after a rest, not a steady knock: only a
        burst's last request sits on a token's edge, where a few ms of the client's timing can flip
        a decision, not every knock. The bursts are due while the second key is learned
        (``wait_until``), on one key only."""
        longest = max(min(refill.longest, cap), 1.0)
        first = self.endpoint.now() + min(3 * refill.gap, longest / 2)
        self.due += [(first, refill.key), (first + min(6 * refill.gap, longest), refill.key)]

    def learn(self) -> float:
        """Two keys, the second started half a window after the first: windows opened by a first
        request bring each back a whole W after its start, clock-aligned ones bring them back at
        edges a whole W apart. (Started one W apart, both kinds would look alike.) Where the first
        key's fingerprint has a window shorter than its quota took to come back, the limiter
        counts refused requests (HAProxy's counter: probed, a key's quota came back after 2 W) and
        is no window with a phase: the second key starts at once and is first probed a window after
        its burst, so its own probes do not hold its quota back. Returns a burst's pace: how long
        one request took."""
        e = self.endpoint
        start = e.now()
        back, pace, refill = self.learn_key()
        if self.refusal is not None:
            self.check_fields(self.refusal, [s.answer for s in e.log])
        fits = fingerprint_of([s.answer for s in e.log])
        window = min(f.policy.window_s for f in fits if f.agreed == fits[0].agreed
                     and math.isclose(f.policy.limit, fits[0].policy.limit, rel_tol=0.05))
        late = window < LATE * back[1]
        if refill is not None:
            self.refill(refill, window if late else math.inf)
        if self.left_alone is not None:  # knocks held the first key back: the second is left alone as long
            second = self.learn_key(quiet=self.left_alone)[2]
        elif late:
            second = self.learn_key(quiet=max(window * GROWTH, KNOCKED * (back[1] - back[0])), expect=back)[2]
        else:
            half = start + 0.5 * back[1]
            self.wait_until(half + math.ceil((e.now() - half) / back[1]) * back[1])
            # first probed once left alone a little longer than the silence that brought the first back
            second = self.learn_key(back, quiet=KNOCKED * (back[1] - back[0]), expect=back)[2]
        if refill is None and second is not None:
            self.refill(second)
        self.wait_until(max([e.now(), *(at for at, _ in self.due)]))
        return pace

    def check_fields(self, refusal: Answer, so_far: list[Answer]) -> None:
        """Test what a refusal promises on fresh keys, each saturated and then sent one request
        exactly when its own refusal promised: at its Retry-After (admitted?) and, when the reset
        says another time, at the reset (admitted with the whole quota?); a promise the first
        key's probes already tested (``so_far``) is not tested again. The header truth reads them."""
        f, truth = refusal.fields, header_truth(so_far)
        tested = {"retry_after_s": truth.retry_after.kept + truth.retry_after.broken,
                  "reset_s": truth.reset.kept + truth.reset.broken}
        kinds = [k for k in ("retry_after_s", "reset_s") if getattr(f, k) is not None and not tested[k]]
        if f.retry_after_s is not None and f.reset_s == f.retry_after_s:
            kinds = kinds[:1]
        for kind in kinds:
            key = self.fresh()
            first = self.burst(key, "check-fields", self.first_burst)
            wait = getattr(first[-1].fields, kind)
            if first[-1].allowed or wait is None or wait > self.max_wait_s:
                continue
            self.endpoint.sleep_until(first[-1].done + wait)
            self.endpoint.send(key, "check-fields")

    def aligned_edge(self, limit: int, window_s: float, pace: float) -> bool:
        """``limit`` just before the next multiple of W since the epoch, ``limit`` just after;
        whether they landed there (``landed``)."""
        e, key, m = self.endpoint, self.fresh(), MARGIN * window_s
        edge = next_edge(e.now(), limit, window_s, pace)
        e.sleep_until(edge - m - 2 * limit * pace)  # early is harmless, late spills past the edge
        before = self.burst(key, "hunt-clock-edge", limit)
        e.sleep_until(edge + m)
        return self.tried("clock", landed(before, self.after_edge(key, "hunt-clock-edge", limit, window_s, pace),
                                          edge, edge, window_s))

    def pace(self, learned: float, limit: int, window_s: float) -> float:
        """The pace to aim at: the latest burst's where a busy machine sends slower than learned
        (a burst aimed at the learned pace spills past the edge), yet slow enough for both bursts
        inside one W: 2 margins and 3L requests (2L of lead, L past the edge)."""
        return min(max(learned, self.achieved), window_s * (1 - 2 * MARGIN) / (3 * limit) * 0.9)

    def tried(self, edge: str, hit: bool) -> bool:
        """Whether a try at ``edge`` landed (``landed``), kept in ``self.landed`` when it did."""
        if hit:
            self.landed.add(edge)
        return hit

    def after_edge(self, key: int, role: str, limit: int, window_s: float, pace: float) -> list[Answer]:
        """Past the edge: knock until admitted (for a tenth of W at most: a W learned a little
        short must not waste the burst on refusals), then send until refused; the answers."""
        e = self.endpoint
        until = e.now() + window_s / 10
        knocks = [e.send(key, role)]
        while not knocks[-1].allowed:
            if e.now() > until:
                return knocks
            e.sleep_until(e.now() + max(pace, window_s / 100))
            knocks.append(e.send(key, role))
        return knocks + self.burst(key, role, 2 * limit)

    def first_hit_edge(self, limit: int, window_s: float, pace: float, meanwhile: float = 0.0) -> bool:
        """One request opens a key's window, ``limit - 1`` just before its end, ``limit`` just after;
        the clock-edge hunt runs meanwhile when it fits inside the wait (``meanwhile`` its W).
        Whether the first-hit bursts landed as aimed (``landed``)."""
        e, key, m = self.endpoint, self.fresh(), MARGIN * window_s
        # from the opener to the first-hit burst; the clock hunt past its edge: a margin, its knocks
        # (a tenth of W where the window is not the clock's: ``after_edge``), its burst
        room, lead = window_s - m - 2 * (limit - 1) * pace, (MARGIN + 1 / 10) * meanwhile + 4 * limit * pace
        if meanwhile:  # opened just after a clock edge, the next one comes too late to hunt meanwhile:
            edge = next_edge(e.now(), limit, meanwhile, pace)  # open a little later, as it fits
            later = edge + lead - room + m / 10
            if e.now() < later and next_edge(later, limit, meanwhile, pace) == edge:
                e.sleep_until(later)
        opened = e.send(key, "hunt-first-edge")
        before = opened.sent + room
        if meanwhile and next_edge(e.now(), limit, meanwhile, pace) + lead < before:
            self.aligned_edge(limit, meanwhile, pace)
            if e.now() > before:  # a busy machine ran the clock hunt past the burst's time: a fresh key
                return self.first_hit_edge(limit, window_s, self.pace(pace, limit, window_s))
            meanwhile = 0.0
        e.sleep_until(before)
        first = self.burst(key, "hunt-first-edge", limit - 1) if limit > 1 else [opened]
        e.sleep_until(opened.done + window_s + m)
        after = self.after_edge(key, "hunt-first-edge", limit, window_s, pace)
        if meanwhile:
            self.aligned_edge(limit, meanwhile, pace)
        return self.tried("first-hit", landed(first, after, opened.sent + window_s, opened.done + window_s, window_s))


def landed(before: list[Answer], after: list[Answer], edge_from: float, edge_to: float, window_s: float) -> bool:
    """Whether two bursts aimed at an edge (somewhere in ``edge_from``..``edge_to``) landed there,
    on the times the client recorded: the first answered before the edge, the second sent after
    it, all inside one W. A busy machine spills a burst past its edge: the try proves nothing."""
    return (bool(before) and bool(after) and before[-1].done <= edge_from and after[0].sent >= edge_to
            and after[-1].done - before[0].sent < window_s)


def next_edge(now: float, limit: int, window_s: float, pace: float) -> float:
    """The first multiple of W since the epoch far enough ahead for ``limit`` requests before it."""
    return math.ceil((now + 2 * limit * pace + 2 * MARGIN * window_s) / window_s) * window_s


def fingerprint_of(answers: list[Answer], knocked: bool = False) -> list[Fit]:
    """The fingerprint of a session's answers, seeded by the quota their fields claim; with
    ``knocked`` (a key came back only once left alone: ``Hunt.left_alone``) the stateful behaviours
    too, since no plain model explains it (an extended block of 1.66 s at W = 1 s was "a fixed
    window of 7 per 25 s", and every phase after the learning was shaped by 25 s: 189 s)."""
    limits = [a.fields.limit for a in answers if a.fields.limit]
    windows = [a.fields.window_s for a in answers if a.fields.window_s]
    models = tuple(dict.fromkeys((*MODELS, *STATEFUL_MODELS))) if knocked else MODELS
    fits = fingerprint(seen(answers), limits[-1] if limits else None, windows[-1:], models, wide=knocked)
    if not knocked or not fits:
        return fits
    # what the learning shows of such a limiter, a counter of 26 s dropped after 1.46 s idle repeats
    # as well as a block of 2.15 s: the shortest window first, the later traffic tells them apart
    top = [f for f in fits if f.agreed == fits[0].agreed]
    first = min(top, key=lambda f: f.policy.window_s)
    alike = tuple(f.model for f in top if f is not first)
    return [replace(first, alike=alike), *(f for f in fits if f is not first)]

