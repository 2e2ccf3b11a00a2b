"""Google SRE's client-side adaptive throttling on a hand-computed sequence, and in a retry
storm: the same herd sends fewer retries when its clients throttle themselves."""

from __future__ import annotations

import heapq

import pytest

from harness.sim.simulator import replay
from scenarios import build_model
from scenarios.base import Request
from scenarios.client_throttle import AdaptiveThrottle, reject_probability
from targets.algorithms import Policy, build_params, get_algorithm
from targets.algorithms.base import Decision


def test_reject_probability_formula():
    assert reject_probability(0, 0) == 0.0
    assert reject_probability(10, 0) == pytest.approx(10 / 11)     # nothing accepted
    assert reject_probability(10, 3) == pytest.approx(4 / 11)      # (10 - 2 x 3) / 11
    assert reject_probability(10, 5) == 0.0                         # 10 - 10 = 0
    assert reject_probability(10, 3, k=1.5) == pytest.approx(5.5 / 11)


def test_hand_computed_sequence_over_a_trailing_window():
    throttle = AdaptiveThrottle(k=2.0, window_s=10.0)
    for t in range(4):                      # t = 0..3: 4 requests sent, 1 accepted (at 0)
        throttle.sent_without_asking(float(t))
    throttle.accepted(0.0)
    # at 4: requests 4, accepts 1: (4 - 2) / 5 = 0.4
    assert throttle.probability(4.0) == pytest.approx(0.4)
    assert not throttle.attempt(4.0, 0.39)  # u < 0.4: rejected locally, still counted
    # at 5: requests 5, accepts 1: (5 - 2) / 6 = 0.5
    assert throttle.attempt(5.0, 0.5)       # u >= 0.5: sent
    # at 10.5 the window (0.5, 10.5] has lost t = 0 (a request and the accept): 5 requests
    # (1, 2, 3, 4, 5), 0 accepts: 5 / 6
    assert throttle.probability(10.5) == pytest.approx(5 / 6)


def _retries(client_throttle: str) -> int:
    model = build_model("retry_storm", 10, 1.0, 7, {"clients": "50", "backoff": "full_jitter",
                                                     "client_throttle": client_throttle})
    refused = Decision(False, 0.0, 0.1, 1.0)
    sent = 0
    queue = [(0.0, i, Request(0.0, f"client-{i}", "legit", "storm-app", "POST /api/reports", 1.0)) for i in range(50)]
    while queue:                            # the backend refuses everything, in time order
        _, i, request = heapq.heappop(queue)
        sent += 1
        for retry in model.react(request, refused):
            heapq.heappush(queue, (retry.t, i, retry))
    return sent


def test_a_throttled_herd_sends_fewer_retries_against_a_refusing_backend():
    # without it every client retries until its attempts (30) or its 60 s deadline run out;
    # with it, after a few refusals most retries are dropped before they are sent (seeded: the
    # figures docs/scenarios.md quotes)
    assert (_retries("none"), _retries("adaptive")) == (1430, 60)


def test_every_algorithm_of_a_plan_meets_a_fresh_throttle():
    """The runner replays one model for every algorithm: the throttle's history must not leak
    from one replay into the next."""
    def storm():
        return build_model("retry_storm", 10, 1.0, 7, {"clients": "50", "client_throttle": "adaptive"})

    token_bucket = get_algorithm("token_bucket")
    params = build_params("token_bucket", Policy(10, 1.0, 10))
    shared = storm()
    replay(shared, get_algorithm("fixed_window"), build_params("fixed_window", Policy(10, 1.0, 10)))
    after = replay(shared, token_bucket, params)
    fresh = replay(storm(), token_bucket, params)
    assert len(after.decisions) == len(fresh.decisions) and after.decisions == fresh.decisions
