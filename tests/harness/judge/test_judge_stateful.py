"""Each stateful behaviour a product has (``harness/sim/stateful.py``), judged whole in virtual
time with its parameters drawn from a seeded RNG (the seed is in every message): the judge names
the behaviour, its L, W and idle time or block within 5%, and finds at least 90% of the most that
bursts and gaps of any length get through one window (gaps 5% longer getting as much), within 600
requests and 120 s.

The suite draws with one seed (``SEED``), so CI does not pass or fail by the luck of a draw;
``JUDGE_STATEFUL_SEED=random`` draws afresh each run (a number replays one draw). Draws found
wrong that way on 2026-12-07 (#40) and right since: a forgotten window's idle time read 5.5-5.8%
off (seeds 12, 16 and 18: 0.937 s for 0.994 and 0.888 s; a probe of the bisection came back
whole because the window it started in had ended, not because the key was forgotten: such a
probe is now sent again), a forgotten bucket's 0.627 s read as 0.594 s (seed 33: bisected to
10%, whose middle can be 5.6% off; now 9%), a fixed block of 10 per 2 s blocking 2.52 s named
a sliding log of 10 in any 2.533 s (seed 1070955821: it predicted 54 of the 55 held-back
decisions and 269 of the 276 fitted on, the block 53 and 276: the verdict now names the model
that mispredicts fewest of all), a forgotten bucket of 7 per 2 s whose ttl of 0.804 s read 0.783 s
was hunted with bursts 0.787 s apart, 16 of 21 (seed 102: a shape now counts by the least it gets
with the idle time 5% longer too). Seeds 7, 8, 12, 16, 18, 33, 41, 100-104 and 1070955821 judge
every behaviour right.

The draws stay where the judge's traffic can tell the behaviour from a plain one: a bucket's idle
time up to 0.9 W (0.7 W until a held-back key burst after 15/16 of the return: past that a
forgotten bucket adds under 1/16 of a burst a cycle, docs/peers.md gives the draws), a window's up
to 0.95 W (0.6 W until a whole burst that only seemed to show the idle time, the window having
ended, was followed by one after the longest gap inside a fresh window)."""

from __future__ import annotations

import os
import random
from collections import defaultdict

import pytest

from analysis.header_truth import Answer
from analysis.worst_case import worst_case
from harness.judge.verdict import judge
from harness.judge.virtual import VirtualEndpoint
from targets.algorithms import Policy
from tests.harness.judge.virtual_sessions import most_in_window

pytestmark = pytest.mark.slow  # whole judge sessions in virtual time

SEED = os.environ.get("JUDGE_STATEFUL_SEED", "41")
"""The draw's seed (the module's docstring): 41, every behaviour's draw judged right."""
EXTRA = {"forgetful_token_bucket": (0.3, 0.9), "forgetful_window": (0.3, 0.95), "fixed_block": (1.2, 3.0),
         "extended_block": (1.2, 3.0), "counting_log": None}
"""Each behaviour's third parameter (idle time or block) as a share of W, drawn between these."""
SHARES = os.environ.get("JUDGE_STATEFUL_SHARES")
"""``low,high``: every third parameter drawn between these shares of W instead (a draw outside the
suite's ranges replayed: docs/peers.md's buckets forgotten late)."""


def sent_as(model: str, policy: Policy, extra: float | None, gap: float, whole: bool, bursts: int,
            trickle: bool) -> int:
    """The most one key gets through a window of W from ``bursts`` bursts ``gap`` apart (each of L,
    or until refused when not ``whole``), then, with ``trickle``, one request per L-th of W for W."""
    e = VirtualEndpoint(model, policy, extra=extra, headers=False, max_requests=10 ** 6)
    answers: list[Answer] = []
    for b in range(bursts):
        e.sleep_until(e.now() + gap * (b > 0))
        admitted = 0
        while True:
            answers.append(e.send(1, "oracle"))
            admitted += answers[-1].allowed
            if not answers[-1].allowed or (whole and admitted == policy.limit):
                break
    end = e.now() + policy.window_s
    while trickle and e.now() < end:
        e.sleep_until(e.now() + policy.window_s / policy.limit)
        answers.append(e.send(1, "oracle"))
    return worst_case(answers, policy.window_s).admitted


def largest(model: str, policy: Policy, extra: float | None) -> int:
    """The most any burst-and-gap traffic gets through one window (gaps in steps of W/100 up to
    1.5 W, 1 to 6 bursts, with or without a trickle after them), each shape counted by the least
    it gets with its gaps 5% longer too: written here, apart from the judge's own hunt, on the
    limiter itself. The goal holds the judge to an idle time within 5%, so a shape that pays only
    for gaps known better than that is not one it can be held to find (three bursts of 6 after
    gaps of a 0.48 s idle time fit in 1 s only for gaps of 0.4786-0.482 s; fitted 2% short, the
    judge's shapes missed it: 12 of 18)."""
    return max(min(sent_as(model, policy, extra, i * policy.window_s / 100 * f, whole, bursts, trickle)
                   for f in (1.0, 1.05))
               for i in range(1, 151) for whole in (True, False) for bursts in (1, 2, 3, 4, 6)
               for trickle in (False, True))


@pytest.mark.parametrize("model", list(EXTRA))
def test_each_stateful_behaviour_is_named_with_its_parameters_and_nine_tenths_of_its_worst_case(model):
    seed = random.randrange(2 ** 32) if SEED == "random" else int(SEED)
    rng = random.Random(seed)
    limit, window_s = rng.randint(5, 12), rng.choice([1.0, 2.0])
    shares = EXTRA[model] and (tuple(map(float, SHARES.split(","))) if SHARES else EXTRA[model])
    extra = rng.uniform(*shares) * window_s if shares else None
    policy = Policy(limit, window_s, limit if model == "forgetful_token_bucket" else None)
    endpoint = VirtualEndpoint(model, policy, extra=extra, headers=False, max_requests=600)
    v = judge(endpoint, max_wait_s=45, claim=Policy(limit, window_s))  # a knock-extended block of 6 s needs 0.15 of it
    said = f"seed {seed}: {model} L = {limit}, W = {window_s:g} s, extra = {extra}: {v.best.what()}"
    assert v.cut is None and v.explained and v.best.model == model, said
    assert abs(v.best.policy.limit - limit) <= 0.05 * limit and abs(v.best.policy.window_s - window_s) <= 0.05 * window_s, said
    assert extra is None or abs(v.best.extra - extra) <= 0.05 * extra, said
    # the worst case against the limiter's own log: it decides each request at the middle of its round trip
    decided: dict[int, list[float]] = defaultdict(list)
    for s in endpoint.log:
        if s.answer.allowed:
            decided[s.answer.key].append(s.answer.sent + endpoint.service_s / 2)
    span = window_s - endpoint.service_s
    assert most_in_window(decided, span - 1e-9) <= v.worst.admitted <= most_in_window(decided, span + 1e-9), said
    most = largest(model, policy, extra)
    assert v.worst.admitted >= 0.9 * most, f"{said}: {v.worst.admitted} of {most}"
    assert endpoint.now() - endpoint.start <= 120, f"{said}: {endpoint.now() - endpoint.start:.0f} s"
