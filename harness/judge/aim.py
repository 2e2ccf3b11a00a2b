"""The worst-case hunt, aimed: which bursts, idle gap and start in the clock's second the fitted
model says admit the most in one window, asked of the model on a virtual clock before anything
is sent.

The model-free gap comes first (``check.best_gap``: what the explored key measured); the model
can only replace it with a shape it predicts admits more. That matters where a limiter's best
return is not a refill the explored gaps sample evenly: Traefik recreates a bucket full once its
key's expiry, kept in whole Unix seconds, has passed, so bursts started on the clock every 1.95 s,
each two second boundaries after the last, get a whole burst every time (bench judge-products:
120 of 120 live, where the explored gap found 43); HAProxy counts refused requests and starts a
key's period at its first request, so bursts late in consecutive periods, over three windows,
admit more than bursts until refused over one (37-38 of 40, was 22). What is sent is still
measured: the worst case reported is what the endpoint admitted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from analysis.worst_case import worst_case
from harness.sim.fingerprint import Fit
from harness.sim.stateful import STATEFUL

from . import check
from .virtual import VirtualEndpoint

GAP_SHARES = tuple(np.geomspace(0.02, 1.0, 24).tolist())
"""Idle gaps asked about, as shares of the quota's full return (2% to all of it)."""
SECOND_PHASES = (0.0, 0.25, 0.5, 0.75)
"""Where in the clock's second the first burst starts (a limiter keeping time in whole seconds)."""
WINDOW_PHASES = (0.9, 0.95)
"""Where in a window since the epoch it starts (a limiter whose counter periods the clock aligns:
a burst late in one period and another late in the next, under W apart)."""
SECOND_GAPS = (0.95, 1.95, 2.95)
"""Gaps (or cycles) just under a whole number of seconds: a cycle that crosses one more second
boundary each time than it lasts (Traefik's bucket, new once two boundaries passed)."""
WINDOW_GAPS = (0.9, 0.95)
"""Gaps asked about besides ``GAP_SHARES``, as shares of the window: the second burst late in the next period."""
JITTER_S = 0.05
"""A shape counts by the least it admits started at its phase and this much later: a live
session's round trips move a burst by milliseconds, and a shape that pays only at one instant is
not a shape to send (``PACE_FACTORS`` likewise)."""
LONG_WINDOWS = 3
"""The longest hunt asked about, in windows: the first period opened, one refused, then late in two more."""
MAX_BURSTS = 100
"""Gaps that would fit more bursts than this in one window are not asked about (a claimed window
far longer than the quota's return would make each question thousands of requests)."""
PACE_FACTORS = (1.0, 2.0)
"""A shape counts by the least it admits with answers as far apart as the explored key's and twice
as far: the hunt's bursts come later in a session, and a cycle that only just fits a boundary
(Traefik's) is lost when a burst takes longer (bench judge-products: 100 of 120 live at one pace)."""
IDLE_MARGINS = (0.005, 0.02, 0.05, 0.06)
"""A fitted idle time is asked about 0.5%, 2%, 5% and 6% longer: a gap just past it brings the key
back new (on the 24 shares' grid the nearest gap past a ttl of 0.51 W was 0.60 W: 24 of 27 found;
a ttl of 0.47 W fitted 2% long, 2% more left two gaps too long for a third burst inside W: 14 of
18); 6%: just past where ``UNSURE`` puts the truth at the latest."""
REFILLED = ("forgetful_token_bucket",)
"""A bucket recreated full after an idle time: its hunts also spend the end of the window at the
refill rate (a ttl of 0.63 W: two bursts of 12 and 3 of the refill, 27, where bursts alone got 24).
Not a plain bucket's: its bursts already reach B + L, and each shape more is asked of the model
while a live session waits (a live NGINX session took 67 s with it, 54 s without); over one window
only (the longer hunts are the costliest questions)."""
UNSURE = 0.05
"""A forgotten state's fitted idle time may be this much short of the truth (the explored key's
bisection reads it within 5%: ``check.BISECT_TO``): a shape counts by the least it admits with the
idle time that much longer too, so the hunt never bets on a gap just past the fitted one (a ttl
of 0.804 s read 0.783 s: bursts 0.787 s apart were predicted 22 and got 16; the largest is 21)."""
EPOCH = 1_764_000_000.0
"""Where the virtual clock starts (the phases are counted from the epoch, as live)."""


@dataclass(frozen=True)
class Aim:
    """The hunt's bursts (``most`` admitted at most, each until refused), its idle gap, where its
    first burst starts (``phase`` of a ``period_s`` counted from the epoch; None: at once), and what
    the fit predicts it admits in one window."""

    most: int
    gap: float
    phase: float | None
    predicted: int
    period_s: float = 1.0
    windows: int = 1
    paced: bool = False
    """Bursts every ``gap`` s from the first (``check.paced``), not ``gap`` s after the last answer."""
    every: float | None = None
    """After the last burst the window lets in, one request every ``every`` s (``check.repeat``)."""

    def script(self, window_s: float, at: float = 0.0) -> check.Script:
        if self.paced:
            return check.paced(self.most, self.gap, window_s, at, self.windows)
        return check.repeat(self.most, self.gap, window_s, at, self.windows, self.every)


def predicted(fit: Fit, shape: Aim, start: float, window_s: float, pace_s: float) -> int:
    """What ``fit`` admits to one key in any ``window_s`` of the hunt ``shape``, started at
    ``start`` (epoch seconds) with answers ``pace_s`` apart."""
    virtual = VirtualEndpoint(fit.model, fit.policy, start=start, service_s=pace_s, max_requests=10 ** 6, headers=False,
                              extra=fit.extra)
    check.run_scripts(virtual, [(0, "hunt-gaps", shape.script(window_s))])
    return worst_case([s.answer for s in virtual.log], window_s).admitted


def aim(fit: Fit, most: int, limit: int, measured_gap: float, back_s: float, window_s: float, pace_s: float) -> Aim:
    """The measured gap with bursts of ``most``, unless the fit predicts more of another shape:
    bursts of ``most`` or of ``limit``, each ``GAP_SHARES`` of ``back_s`` (and ``SECOND_GAPS``, ``WINDOW_GAPS``)
    after the last or on the clock, each phase of a second and of a window, over one window; then,
    only if that predicts more still, over ``LONG_WINDOWS`` (a limiter that counts refusals gives
    most late in its periods)."""
    pace_s = max(pace_s, 1e-4)
    phases = [(1.0, p) for p in SECOND_PHASES] + [(window_s, p) for p in WINDOW_PHASES]
    later = [replace(fit, extra=fit.extra * (1 + UNSURE))] if forgets(fit) else []

    def least(shape: Aim, period_s: float, phase: float, above: float = -1) -> int:
        """What ``fit`` admits at the least (jitter, pace), with the idle time ``UNSURE`` longer too.
        The asking ends at a count of ``above`` or less: the shape is then no better than the best
        so far, whatever its least (most shapes are not, and each question is a session replayed)."""
        start = start_at(EPOCH, phase, period_s)
        n = math.inf
        for f in (fit, *later):
            for j in (0.0, JITTER_S):
                for k in PACE_FACTORS:
                    n = min(n, predicted(f, shape, start + j, window_s, pace_s * k))
                    if n <= above:
                        return n
        return int(n)

    measured = Aim(most, measured_gap, None, 0)
    best = replace(measured, predicted=min(least(measured, *p) for p in phases))
    gaps = [measured_gap, *(share * back_s for share in GAP_SHARES), *SECOND_GAPS,
            *(share * window_s for share in WINDOW_GAPS), *(fit.extra * (1 + m) for m in IDLE_MARGINS if forgets(fit))]
    refills = (None, fit.policy.window_s / fit.policy.limit) if fit.model in REFILLED else (None,)
    for windows in (1, LONG_WINDOWS):
        for size in dict.fromkeys((most, limit)):
            for gap in (g for g in gaps if g >= windows * window_s / MAX_BURSTS):
                for period_s, phase in phases:
                    for on_clock, every in [(False, e) for e in refills[:1 + (windows == 1)]] + [(True, None)]:
                        shape = Aim(size, gap, phase, 0, period_s, windows, on_clock, every)
                        if (n := least(shape, period_s, phase, best.predicted)) > best.predicted:
                            best = replace(shape, predicted=n)
    return best


def forgets(fit: Fit) -> bool:
    """Whether the fit's state is forgotten after an idle time (its model's third parameter is one)."""
    return fit.extra is not None and fit.model in STATEFUL and STATEFUL[fit.model].extra == "idle_s"


def start_at(now: float, phase: float | None, period_s: float = 1.0) -> float:
    """The first instant from ``now`` at ``phase`` of a ``period_s`` counted from the epoch
    (``now`` itself for None)."""
    if phase is None:
        return now
    at = math.floor(now / period_s) * period_s + phase * period_s
    return at if at >= now else at + period_s
