"""The worst-case hunt aimed by the fitted model (harness/judge/aim.py): where a burst starts, and
the shapes that reach the largest a stateful limiter admits in one window, in virtual time."""

from __future__ import annotations

import pytest

from harness.judge.aim import EPOCH, Aim, aim, predicted, start_at
from harness.judge.verdict import judge
from harness.judge.virtual import VirtualEndpoint
from harness.sim.fingerprint import Fit
from targets.algorithms import Policy

TRAEFIK = Policy(20, 10.0, 20)
"""2 tokens a second, burst 20: Traefik's ttl is then 2 s, kept in whole Unix seconds (traefik_rate.py)."""
TRAEFIK_LARGEST = 120
"""A key whose expiry (floor(now) + 2) has passed gets a new bucket, full: a burst of 20 every time
two second boundaries were crossed since the last, so bursts under 2 s apart and at most 6 in a
half-open 10 s (a 7th would need them 10/7 s apart, which cannot cross two boundaries each time)."""


def test_a_burst_starts_at_its_phase_of_the_period():
    assert start_at(100.3, 0.5) == 100.5 and start_at(100.7, 0.5) == 101.5
    assert start_at(100.3, None) == 100.3 and start_at(100.5, 0.5) == 100.5
    assert start_at(23.0, 0.9, 10.0) == 29.0 and start_at(29.5, 0.9, 10.0) == 39.0


def test_the_fit_aims_a_forgotten_bucket_at_the_second_boundaries_it_keeps_time_by():
    fit = Fit("traefik_rate", TRAEFIK, 1, 1)
    # the explored key's bisected gap (1.7 s) started at once: the bucket is new only when that
    # gap happened to cross two boundaries
    at_once = min(predicted(fit, Aim(42, 1.7, None, 0), EPOCH + p, 10.0, 0.002) for p in (0.0, 0.25, 0.5, 0.75))
    aimed = aim(fit, 42, 20, 1.7, 10.0, 10.0, 0.002)
    assert at_once < 100 <= aimed.predicted <= TRAEFIK_LARGEST and aimed.phase is not None
    start = start_at(EPOCH, aimed.phase, aimed.period_s)
    assert predicted(fit, aimed, start, 10.0, 0.002) == aimed.predicted


def test_a_limit_the_model_free_gap_already_reaches_keeps_it():
    """A sliding log admits L in any W whatever the traffic: no shape predicts more than the
    measured gap's, so the hunt is sent as measured (at once)."""
    fit = Fit("sliding_log", Policy(20, 10.0), 1, 1)
    aimed = aim(fit, 42, 20, 10.0, 10.0, 10.0, 0.002)
    assert (aimed.gap, aimed.phase, aimed.predicted, aimed.windows) == (10.0, None, 20, 1)


@pytest.mark.slow  # two whole judge sessions in virtual time
@pytest.mark.parametrize(("model", "policy", "largest"), [
    ("traefik_rate", TRAEFIK, TRAEFIK_LARGEST),
    # counts refused requests; a key's period starts at its first request: 20 late in one period
    # and 20 late in the next, under 10 s apart (the first period opened, its burst refused once)
    ("haproxy_freq_ctr", Policy(20, 10.0), 40),
])
def test_a_session_finds_nine_tenths_of_the_largest_a_stateful_limiter_admits(model, policy, largest):
    endpoint = VirtualEndpoint(model, policy, headers=False)
    v = judge(endpoint, max_wait_s=30, claim=Policy(policy.limit, policy.window_s))
    assert v.best.model == model and v.explained, v.best.what()
    assert 0.9 * largest <= v.worst.admitted <= largest, v.shapes.get(v.worst.key)
