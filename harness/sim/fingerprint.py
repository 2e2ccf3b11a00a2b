"""Which of the suite's models behaves like a limiter seen only from outside: every algorithm and
peer model replayed on the decisions a client recorded, L, W and B fitted, the best named.

The fit is a search, not a formula: a grid seeded by what the answers said (``RateLimit-Policy``'s
q and w) and by what the decisions show (the most a fresh key got before its first refusal; how
long until a refused key was admitted again; the spacing of those re-admissions across keys),
widened by the round numbers windows are configured with, then refined around each model's best.
Clock-aligned models (windows at multiples of W since the epoch) agree only at the exact W, which
is why round values are candidates and not only multiples of a seed.

Models that no sequence of client decisions can tell apart are reported together (a token bucket,
GCRA and a metering leaky bucket admit the same requests for the same burst and rate).

The stateful behaviours products have (``stateful.py``: state forgotten after an idle time, a block
once tripped, fixed or extended by each refusal, refusals counted) are fitted the same way with a
third parameter (``Fit.extra``: the idle time or the block), when asked for (``STATEFUL_MODELS``).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from targets.algorithms import ALGORITHMS, PEER_MODELS, Policy, PolicyError, build_params, get_algorithm

from .stateful import STATEFUL

WINDOWED = ("fixed_window", "sliding_log", "sliding_window_counter", "sliding_window_ring", "limits_fixed_window",
            "limits_sliding_window_counter_redis", "haproxy_freq_ctr", "envoy_ratelimit_window", "kong_window",
            "caddy_ring")
BUCKETED = ("token_bucket", "gcra", "leaky_bucket", "traefik_rate", "envoy_local_ratelimit")
IN_FLIGHT = ("concurrency", "adaptive")
MODELS = (*ALGORITHMS, *PEER_MODELS)
"""Every model of the suite, in the order ties are named (the ten algorithms first)."""
STATEFUL_MODELS = tuple(STATEFUL)
"""The stateful behaviours (``stateful.py``), each with a third parameter but ``counting_log``."""
ROUND_S = (0.1, 0.25, 0.5, 1.0, 5.0, 10.0, 60.0)
ROUND_TRIPS = 10
"""No W is fitted shorter than this many median round trips (of decisions seen with one): from
outside a decision is known only within its round trip, and a model whose state turns over
inside one or two repeats any decisions at all (a limiter refusing a fifth of its requests at
random "fitted" a counter of 1 per 2 ms, 100% on held-back traffic, with a worst case of 0)."""
STATEFUL_WINDOWS = (0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 15.0, 20.0, 30.0, 60.0)
PHRASES = {
    "fixed_window": "a fixed window of {L} per {W} s aligned to the clock",
    "limits_fixed_window": "a fixed window of {L} per {W} s opened by each key's first request (refusals count)",
    "sliding_log": "a sliding log of {L} in any {W} s",
    "sliding_window_counter": "a sliding window counter of {L} per {W} s (two clock-aligned windows)",
    "sliding_window_ring": "a ring of sub-windows holding {L} per {W} s",
    "limits_sliding_window_counter_redis": "limits' sliding window counter (Redis) of {L} per {W} s",
    "haproxy_freq_ctr": "HAProxy's frequency counter of {L} per {W} s (refusals count)",
    "envoy_ratelimit_window": "envoyproxy/ratelimit's epoch-aligned window of {L} per {W} s (refusals count)",
    "kong_window": "Kong's UTC-calendar window of {L} per {W} s (counted after the decision)",
    "caddy_ring": "caddy-ratelimit's sliding log of {L} admissions in any {W} s",
    "token_bucket": "a token bucket of {B} refilled at {L} per {W} s",
    "traefik_rate": "Traefik's rateLimit, burst {B} at {L} per {W} s (short waits held, idle buckets recreated full)",
    "envoy_local_ratelimit": "Envoy's local token bucket of {B} refilled at {L} per {W} s",
    "gcra": "GCRA with a burst of {B} at {L} per {W} s",
    "leaky_bucket": "a leaky bucket (meter) of {B} leaking {L} per {W} s",
    "concurrency": "a limit of {B} in flight", "adaptive": "an adaptive concurrency limit of {B} in flight",
    "none": "no limit",
}


@dataclass(frozen=True)
class Seen:
    """One decision as a client saw it: when (the middle of its request), its key, the verdict,
    and when its answer arrived (the release of an in-flight slot)."""

    t: float
    key: str
    allowed: bool
    done: float | None = None
    sent: float | None = None
    """When the request left (with ``done``, the round trip the limiter decided somewhere in)."""


@dataclass(frozen=True)
class Fit:
    model: str
    policy: Policy
    agreed: int
    decisions: int
    alike: tuple[str, ...] = ()
    """Other models that agree exactly as well."""
    extra: float | None = None
    """A stateful model's third parameter (``stateful.py``: its idle time or its block, seconds)."""

    @property
    def agreement(self) -> float:
        return self.agreed / self.decisions if self.decisions else 0.0

    def what(self) -> str:
        """The model in words, with its fitted parameters."""
        p = self.policy
        phrase = STATEFUL[self.model].phrase if self.model in STATEFUL else PHRASES[self.model]
        return phrase.format(L=f"{p.limit:g}", W=f"{p.window_s:g}", B=f"{p.effective_burst:g}",
                             X=f"{self.extra:.3g}" if self.extra is not None else "")

    def sentence(self) -> str:
        also = f" (as well: {', '.join(self.alike)})" if self.alike else ""
        return f"behaves like {self.what()}: {self.agreement:.1%} of {self.decisions} decisions{also}"


@functools.lru_cache(maxsize=4096)
def transition(model: str, policy: Policy, extra: float | None = None) -> tuple[Any, Any, Any]:
    """(decide, release, params) of a suite model or a stateful behaviour under ``policy``
    (``extra``: a stateful model's third parameter); ``PolicyError`` when they do not make params.
    Kept: a fit asks the same few candidates hundreds of thousands of times, and checking a
    policy's params cost more than a tenth of a judge session (params are frozen: safe to share)."""
    if model in STATEFUL:
        m = STATEFUL[model]
        return m.decide, None, m.build(policy, extra)
    algorithm = get_algorithm(model)
    return algorithm.decide, algorithm.release, build_params(model, policy)


def agreement(model: str, policy: Policy, seen: Sequence[Seen], misses: int | None = None,
              within_round_trip: bool = False, extra: float | None = None) -> int:
    """How many of the decisions ``model`` under ``policy`` repeats, a state per key, in time order;
    an in-flight model's slot is released when its answer arrived. -1 once more than ``misses``
    differ (the search's bound: a candidate worse than the best so far is dropped early).

    ``within_round_trip``: a decision the model does not repeat at its estimated time is tried at
    the ends of its round trip (``sent``, ``done``), and repeated if either gives it. From outside,
    the limiter decided somewhere in there; on a busy machine the estimate is off by the wait
    before or after the decision. A claim is only contradicted by decisions no time in the round
    trip explains (greedily, in time order: the first time that repeats it is kept). ``extra``: a
    stateful model's third parameter."""
    try:
        decide, release, params = transition(model, policy, extra)
    except PolicyError:
        return -1
    budget = len(seen) if misses is None else misses
    states: dict[str, object] = {}
    pending: list[tuple[float, str]] = []
    for s in seen:
        if release is not None:
            for done, key in [p for p in pending if p[0] <= s.t]:
                states[key] = release(states.get(key), done, 1.0, params)
                pending.remove((done, key))
        state = states.get(s.key)
        decision, states[s.key] = decide(state, s.t, 1.0, params)
        if decision.allowed != s.allowed and within_round_trip:
            for t in (s.sent, s.done):
                if t is not None and t != s.t and (tried := decide(state, t, 1.0, params))[0].allowed == s.allowed:
                    decision, states[s.key] = tried
                    break
        if decision.allowed != s.allowed:
            budget -= 1
            if budget < 0:
                return -1
        if release is not None and decision.allowed:
            pending.append((s.done if s.done is not None else s.t, s.key))
    return len(seen) - ((len(seen) if misses is None else misses) - budget)


def first_runs(seen: Sequence[Seen]) -> list[int]:
    """Per key, how many it was admitted before its first refusal (keys never refused excluded)."""
    runs = []
    for decisions in by_key(seen).values():
        n = next((i for i, s in enumerate(decisions) if not s.allowed), None)
        if n is not None:
            runs.append(n)
    return runs


def readmissions(seen: Sequence[Seen]) -> list[tuple[float, float]]:
    """Per key, (its first request, its first admission after a refusal)."""
    found = []
    for decisions in by_key(seen).values():
        refused = next((i for i, s in enumerate(decisions) if not s.allowed), None)
        back = None if refused is None else next((s for s in decisions[refused:] if s.allowed), None)
        if back is not None:
            found.append((decisions[0].t, back.t))
    return found


def by_key(seen: Iterable[Seen]) -> dict[str, list[Seen]]:
    keyed: dict[str, list[Seen]] = defaultdict(list)
    for s in seen:
        keyed[s.key].append(s)
    return keyed


def median_round_trip(seen: Sequence[Seen]) -> float:
    """The median round trip of the decisions seen with one (0: none was)."""
    trips = sorted(s.done - s.sent for s in seen if s.done is not None and s.sent is not None)
    return trips[len(trips) // 2] if trips else 0.0


def window_seeds(seen: Sequence[Seen], hinted: Iterable[float]) -> list[float]:
    """Windows worth trying, likeliest first: the hints, then round values of and values within 6%
    of (and of half) each key's time to re-admission and of the spacing of re-admissions across
    keys (aligned windows re-admit at multiples of W)."""
    back = readmissions(seen)
    edges = sorted(b for _, b in back)
    seeds = [b - a for a, b in back] + [b - a for a, b in itertools.pairwise(edges) if b - a > 0.01]
    seeds += [seed / 2 for seed in seeds]  # refused knocks that count (HAProxy) delay re-admission past W
    grid = [w for w in hinted if w and w > 0]
    grid += [round(seed / r) * r for seed in seeds for r in ROUND_S if round(seed / r) > 0]
    grid += [seed * (1 + k / 50) for seed in seeds for k in (0, -1, 1, -2, 2, -3, 3)]
    return list(dict.fromkeys(round(w, 3) for w in grid if w >= 0.001))


def refill_seeds(seen: Sequence[Seen], limits: Sequence[float]) -> list[float]:
    """Windows worth trying for a bucket: L over the rate a key was admitted at after its first
    refusal (a bucket kept empty admits at its refill rate: W = L / r)."""
    rates = []
    for decisions in by_key(seen).values():
        refused = next((s for s in decisions if not s.allowed), None)
        after = [] if refused is None else [s.t for s in decisions if s.allowed and s.t > refused.t]
        if len(after) >= 3 and after[-1] > after[0]:
            rates.append((len(after) - 1) / (after[-1] - after[0]))
    return list(dict.fromkeys(round(L / r * (1 + k / 25), 3) for r in rates for L in limits for k in range(-3, 4)))


def limit_seeds(seen: Sequence[Seen], hinted: Iterable[float]) -> list[float]:
    runs = first_runs(seen)
    seeds = [round(h) for h in hinted if h and h >= 1]
    # the first key's run (a fresh key saturated) and the shortest (a key that found no edge to exploit)
    seeds += [n + d for n in (*runs[:1], *([min(runs)] if runs else [])) for d in (0, -1, 1) if n + d >= 1]
    return list(dict.fromkeys(seeds)) or [1.0]


TOLD_SLACK = 1
"""How many more decisions the numbers an endpoint states may miss than the best fit and still be
the fit: a client's timing can flip one decision on a token's or a window's very edge."""


def fit_model(model: str, seen: Sequence[Seen], limits: Sequence[float], windows: Sequence[float],
              misses: int, told: tuple[float, float] | None = None) -> Fit | None:
    """The best (L, W) of one model on the grid, then W refined in 0.2% steps around it; the L and
    W the endpoint ``told`` instead when they miss at most ``TOLD_SLACK`` more. None when no
    candidate misses ``misses`` decisions or fewer."""
    def policy(limit: float, window: float) -> Policy:
        return Policy(limit, window, limit) if model not in IN_FLIGHT else Policy(limit, 1.0, limit)

    grid = [(L, W) for L in limits for W in (windows if model not in IN_FLIGHT else (1.0,))]
    if model == "none":
        grid = [(1.0, 1.0)]
    best: tuple[int, float, float] | None = None
    for L, W in grid:
        agreed = agreement(model, policy(L, W), seen, misses, within_round_trip=True)
        if agreed >= 0 and (best is None or agreed > best[0]):
            best, misses = (agreed, L, W), len(seen) - agreed
    if best is None:
        return None
    if model not in IN_FLIGHT and model != "none":
        _, L, W = best
        for w in sorted((round(W * (1 + k / 500), 3) for k in range(-10, 11)), key=lambda w: abs(w - W)):
            agreed = agreement(model, policy(L, w), seen, misses - 1, within_round_trip=True)
            if agreed > best[0]:
                best, misses = (agreed, L, w), len(seen) - agreed
        if told is not None and (best[1], best[2]) != told:
            agreed = agreement(model, policy(*told), seen, misses + TOLD_SLACK, within_round_trip=True)
            if agreed >= best[0] - TOLD_SLACK:
                best = (agreed, *told)
    return Fit(model, policy(best[1], best[2]), best[0], len(seen))


def extra_seeds(seen: Sequence[Seen], kind: str) -> list[float]:
    """The values of a stateful model's third parameter where its decisions on ``seen`` can change,
    as the midpoints between the times they depend on (each key's idle gaps between requests for
    ``idle_s`` and an extended block; for a fixed block, the time since the refusal that followed
    an admission, for each request until the key is admitted again); within 0.5% of each other
    counted once, the shortest first."""
    values: list[float] = []
    for decisions in by_key(seen).values():
        if kind == "idle_s" or kind == "block_s":
            values += [b.t - a.t for a, b in itertools.pairwise(decisions)]
        if kind == "block_s":
            trip = None
            for before, d in itertools.pairwise(decisions):
                if trip is None and before.allowed and not d.allowed:
                    trip = d.t
                elif trip is not None:
                    values.append(d.t - trip)
                    trip = None if d.allowed else trip
    binned = sorted({round(math.log(v) / math.log(1.005)) for v in values if v >= 1e-3})
    points = [1.005 ** b for b in binned]
    return [round(math.sqrt(a * b), 4) for a, b in itertools.pairwise(points)] + points[-1:] * bool(points)


def middle_of_best(values: Sequence[float], scores: Sequence[int]) -> float:
    """The middle (geometric) of the first run of consecutive ``values`` (sorted) that score best:
    every value in it explains the decisions alike, so its middle is the least wrong, where the
    first value of the run (or a hint) sat at an end of it (a forgotten window's idle time read at
    1.3125 s for 1.395 s: 6% short, and a held-back decision mispredicted). A run that reaches the
    last value has no upper end: its first value, the shortest idle time or block that explains
    them (the larger worst case)."""
    top = max(scores)
    first = scores.index(top)
    last = first
    while last + 1 < len(scores) and scores[last + 1] == top:
        last += 1
    return values[first] if last == len(values) - 1 else math.sqrt(values[first] * values[last])


def fit_stateful(model: str, seen: Sequence[Seen], limits: Sequence[float], windows: Sequence[float],
                 misses: int, hints: Sequence[float] = ()) -> Fit | None:
    """A stateful model's best (L, W, extra): the grid of L and W at a few values of its third
    parameter (``hints``, e.g. the idle time a hunt found bringing a burst back whole, and eight
    spread over the values where decisions change, ``extra_seeds``), then the third parameter
    over all those values at the best L and W (the middle of those that explain the most,
    ``middle_of_best``), then W refined in 0.2% steps. None when no candidate
    misses ``misses`` decisions or fewer."""
    kind = STATEFUL[model].extra
    if kind is None:
        return fit_model(model, seen, limits, windows, misses)
    everything = extra_seeds(seen, kind)
    spread = everything[::max(1, len(everything) // 8)]
    first = list(dict.fromkeys([*(h for h in hints if h > 0), *spread])) or [1.0]
    best: tuple[int, float, float, float] | None = None
    for x in first:
        for L in limits:
            for W in windows:
                agreed = agreement(model, Policy(L, W, L), seen, misses, within_round_trip=True, extra=x)
                if agreed >= 0 and (best is None or agreed > best[0]):
                    best, misses = (agreed, L, W, x), len(seen) - agreed
    if best is None:
        return None
    _, L, W, x = best
    scores = [agreement(model, Policy(L, W, L), seen, misses, within_round_trip=True, extra=v) for v in everything]
    if scores and max(scores) >= best[0]:
        x = middle_of_best(everything, scores)
        best, misses = (max(scores), L, W, x), len(seen) - max(scores)
    for w in sorted((round(W * (1 + k / 500), 3) for k in range(-10, 11)), key=lambda w: abs(w - W)):
        agreed = agreement(model, Policy(L, w, L), seen, misses - 1, within_round_trip=True, extra=x)
        if agreed > best[0]:
            best, misses = (agreed, L, w, x), len(seen) - agreed
    return Fit(model, Policy(best[1], best[2], best[1]), best[0], len(seen), extra=best[3])


def fingerprint(seen: Iterable[Seen], limit_hint: float | None = None, window_hints: Sequence[float] = (),
                models: Sequence[str] = MODELS, slack: float = 0.02, extra_hints: Sequence[float] = (),
                wide: bool = False) -> list[Fit]:
    """The models that fit within ``slack`` of the best, best first (ties in the models' order);
    the first names the models that agree exactly as well. ``models`` may name stateful ones
    (``STATEFUL_MODELS``), their third parameter seeded by ``extra_hints`` too; with ``wide`` (the
    judge's explored traffic) they also try ``STATEFUL_WINDOWS`` and a quarter-octave grid."""
    ordered = sorted(seen, key=lambda s: s.t)
    limits = limit_seeds(ordered, [limit_hint or 0])
    shortest = max(0.001, ROUND_TRIPS * median_round_trip(ordered))
    windows = [w for w in window_seeds(ordered, window_hints) if w >= shortest]
    if not windows:
        span = max((ordered[-1].t - ordered[0].t) if ordered else 1.0, shortest)
        windows = [round(span * 2 ** (-k / 4), 3) for k in range(40) if span * 2 ** (-k / 4) >= shortest]
    refills = list(dict.fromkeys([*windows, *(w for w in refill_seeds(ordered, limits) if w >= shortest)]))
    # a block or counted refusals hold a key's return back past W: its W is seen only in steadier
    # traffic, so the stateful models also try round windows and a quarter-octave grid
    wide = [w for w in (*STATEFUL_WINDOWS, *(2 ** (k / 4) for k in range(-16, 27))) if shortest <= w <= 2 * max(windows)]
    windows_stateful = list(dict.fromkeys([*windows, *(round(w, 3) for w in wide)]))
    fits: list[Fit] = []
    bound = len(ordered)
    for model in models:
        told = (limit_hint, window_hints[0]) if limit_hint and window_hints else None
        grid = refills if model in (*BUCKETED, "forgetful_token_bucket") else windows
        grid = list(dict.fromkeys([*grid, *windows_stateful])) if wide and model in STATEFUL else grid
        fit = (fit_stateful(model, ordered, limits, grid, bound, extra_hints) if model in STATEFUL else
               fit_model(model, ordered, limits, grid, bound, told))
        if fit is not None:
            fits.append(fit)
            bound = min(bound, fit.decisions - fit.agreed + math.ceil(slack * len(ordered)))
    fits = sorted((f for f in fits if f.decisions - f.agreed <= bound), key=lambda f: -f.agreed)
    if not fits:
        return []
    best = fits[0]
    alike = tuple(f.model for f in fits[1:] if f.agreed == best.agreed and
                  math.isclose(f.policy.limit, best.policy.limit, rel_tol=0.05))
    return [Fit(best.model, best.policy, best.agreed, best.decisions, alike, best.extra), *fits[1:]]
