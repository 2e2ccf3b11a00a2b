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
from dataclasses import dataclass

from analysis.header_truth import Answer
from harness.sim.fingerprint import Fit, Seen, fingerprint

from .endpoint import Endpoint, JudgeError

GROWTH = 1.05
"""Each probe waits 5% longer than the last since the key's first request: a window of W is
found within 5% in about 60 probes whatever W is; the second key narrows it to 0.5%."""
FINE_STEPS = 10
MARGIN = 0.04
"""How far from a learned edge a burst stops or starts, as a fraction of W."""


class NoLimit(JudgeError):
    """No refusal within the requests the cap allows."""


@dataclass
class Learned:
    limit: int
    """The most a fresh key was admitted before its first refusal."""
    back_s: tuple[float, float]
    """A key's quota came back between these delays after its first request."""
    per_request_s: float
    """How long one request took, sequentially: the pace of a burst."""


def seen(answers: list[Answer]) -> list[Seen]:
    """The decisions for the fingerprint: each at the middle of its request."""
    return [Seen((a.sent + a.done) / 2, a.key, a.allowed, a.done) for a in answers]


class Hunt:
    """One judging session on ``endpoint``, waiting at most ``max_wait_s`` for a quota to return."""

    def __init__(self, endpoint: Endpoint, max_wait_s: float = 30.0, first_burst: int = 400) -> None:
        self.endpoint, self.max_wait_s, self.first_burst = endpoint, max_wait_s, first_burst
        self.keys = 0
        self.refusal: Answer | None = None

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
        return answers

    def probe_back(self, key: int, t0: float, fine: tuple[float, float] | None = None) -> tuple[float, Answer]:
        """Probe ``key`` until admitted; (when the last refused probe was answered, the admitted one).
        Delays since ``t0`` grow by ``GROWTH``; inside ``fine`` (delays) they step by a tenth of it."""
        e = self.endpoint
        refused_at = e.now()
        while True:
            elapsed = e.now() - t0
            step = elapsed * (GROWTH - 1)
            if fine is not None and fine[0] - step <= elapsed <= fine[1] + (fine[1] - fine[0]):
                step = max((fine[1] - fine[0]) / FINE_STEPS, 1e-3)
            elif fine is not None and elapsed < fine[0]:
                step = min(step, fine[0] - elapsed)
            if elapsed + step > self.max_wait_s:
                raise JudgeError(f"no quota came back within {self.max_wait_s:g} s of a key's first request "
                                 "(a window longer than --max-wait?)")
            e.sleep_until(t0 + elapsed + step)
            answer = e.send(key, "probe")
            if answer.allowed:
                return refused_at, answer
            refused_at = answer.done

    def learn_key(self, fine: tuple[float, float] | None) -> tuple[int, tuple[float, float], float]:
        """One key saturated, probed until admitted, saturated again: (first run, back between, pace)."""
        key = self.fresh()
        first = self.burst(key, "learn", self.first_burst)
        if first[-1].allowed:
            raise NoLimit(f"no limit found within {len(first)} requests of one key")
        self.refusal, t0 = first[-1], first[0].sent
        refused_at, back = self.probe_back(key, t0, fine)
        again = self.burst(key, "learn", max(2, len(first) // 2))
        if sum(a.allowed for a in again) < len(first) // 2:
            gap = back.done - first[-1].done
            self.trickle(key, gap / 4, min(12 * gap, max(back.done - t0, 1.0)))
        pace = (first[-1].done - t0) / len(first)
        return len(first) - 1, (refused_at - t0, back.done - t0), pace

    def trickle(self, key: int, every: float, during: float) -> None:
        """The quota came back a little: knock ``every`` s for ``during`` s (a few per token's
        refill, 12 refills, never longer than it took to come back or 1 s); a bucket kept empty
        admits at its refill rate, which the fingerprint reads off these answers."""
        e = self.endpoint
        start = e.now()
        for i in range(1, int(during / every) + 1):
            e.sleep_until(start + i * every)
            e.send(key, "learn")

    def learn(self) -> Learned:
        limit, back, pace = self.learn_key(None)
        if self.refusal is not None:
            self.check_fields(self.refusal)
        _, fine, _ = self.learn_key(back)
        return Learned(limit, (max(back[0], fine[0]), min(back[1], fine[1])) if fine[0] < back[1] else back, pace)

    def check_fields(self, refusal: Answer) -> None:
        """Test what a refusal promises on fresh keys, each saturated and then sent one request
        exactly when its own refusal promised: at its Retry-After (admitted?) and, when the reset
        says another time, at the reset (admitted with the whole quota?). The header truth reads them."""
        f = refusal.fields
        kinds = [k for k in ("retry_after_s", "reset_s") if getattr(f, k) is not None]
        if f.retry_after_s is not None and f.reset_s == f.retry_after_s:
            kinds = ["retry_after_s"]
        for kind in kinds:
            key = self.fresh()
            first = self.burst(key, "check-fields", self.first_burst)
            wait = getattr(first[-1].fields, kind)
            if first[-1].allowed or wait is None or wait > self.max_wait_s:
                continue
            self.endpoint.sleep_until(first[-1].done + wait)
            self.endpoint.send(key, "check-fields")

    def aligned_edge(self, limit: int, window_s: float, pace: float) -> None:
        """``limit`` just before the next multiple of W since the epoch, ``limit`` just after."""
        e, key, m = self.endpoint, self.fresh(), MARGIN * window_s
        edge = math.ceil((e.now() + limit * pace + 2 * m) / window_s) * window_s
        e.sleep_until(edge - m - limit * pace)
        self.burst(key, "hunt-clock-edge", limit)
        e.sleep_until(edge + m)
        self.burst(key, "hunt-clock-edge", 2 * limit)

    def first_hit_edge(self, limit: int, window_s: float, pace: float, meanwhile: float = 0.0) -> None:
        """One request opens a key's window, ``limit - 1`` just before its end, ``limit`` just after;
        the clock-edge hunt runs meanwhile when it fits inside the wait (``meanwhile`` its W)."""
        e, key, m = self.endpoint, self.fresh(), MARGIN * window_s
        opened = e.send(key, "hunt-first-edge")
        before = opened.sent + window_s - m - (limit - 1) * pace
        if meanwhile and e.now() + 2 * limit * pace + meanwhile * (1 + 4 * MARGIN) < before:
            self.aligned_edge(limit, meanwhile, pace)
            meanwhile = 0.0
        e.sleep_until(before)
        self.burst(key, "hunt-first-edge", limit - 1)
        e.sleep_until(opened.done + window_s + m)
        self.burst(key, "hunt-first-edge", 2 * limit)
        if meanwhile:
            self.aligned_edge(limit, meanwhile, pace)


def fingerprint_of(answers: list[Answer]) -> list[Fit]:
    """The fingerprint of a session's answers, seeded by the quota their fields claim."""
    limits = [a.fields.limit for a in answers if a.fields.limit]
    windows = [a.fields.window_s for a in answers if a.fields.window_s]
    return fingerprint(seen(answers), limits[-1] if limits else None, windows[-1:])

