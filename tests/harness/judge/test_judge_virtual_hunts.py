"""Whole judging sessions in virtual time where the hunt must try again: a burst spilled past the
edge, a first-hit try a busy moment spoiled, a clock edge inside a first-hit window, a sliding
counter no edge can push to its bound, a limiter that counts refusals (split from
``test_judge_virtual.py``, so that the two run side by side)."""

from __future__ import annotations

import math

import pytest

from harness.judge.verdict import judge
from harness.judge.virtual import VirtualEndpoint
from targets.algorithms import Policy
from tests.harness.judge.virtual_sessions import POLICY, hunt_s

pytestmark = pytest.mark.slow  # whole judge sessions in virtual time


class SpillsOnce(VirtualEndpoint):
    """A busy moment: the clock-edge hunt's last request before the edge is sent 0.1 s late, past
    the edge, once (the first key it hunts on)."""

    def send(self, key: int, role: str):
        hunted = [s for s in self.log if s.role == "hunt-clock-edge"]
        if role == "hunt-clock-edge" and len(hunted) == POLICY.limit - 1 and len({s.answer.key for s in hunted}) == 1:
            self.sleep_until(math.ceil(self.now() / POLICY.window_s) * POLICY.window_s + 0.1)
        return super().send(key, role)


def test_a_burst_spilled_past_the_edge_is_hunted_again_until_the_model_s_worst_case_is_found():
    endpoint = SpillsOnce("fixed_window", POLICY)
    v = judge(endpoint, max_wait_s=30)
    assert v.best.model == "fixed_window"
    hunted = [s for s in endpoint.log if s.role == "hunt-clock-edge"]
    first_key = hunted[0].answer.key
    first = [s.answer for s in hunted if s.answer.key == first_key]
    assert sum(a.allowed for a in first) == 2 * 10 - 1  # the spill: 9 before the edge, 10 after it
    assert len({s.answer.key for s in hunted}) == 2 and v.worst.admitted == 2 * 10 and v.worst.key != first_key


def test_the_clock_edge_is_hunted_while_a_first_hit_window_is_open():
    """Opened just after a clock edge, a first-hit window's wait would end before the next clock
    edge could be hunted inside it; the opener waits the little it takes for the edge to fit, so
    both edges are hunted in one W (at W = 10 s: 31.5 s for the learning and the hunts, was 40.4 s; the check after them is
    another matter)."""
    endpoint = VirtualEndpoint("fixed_window", Policy(20, 10.0, None), headers=False)
    v = judge(endpoint, max_wait_s=30)
    first_hit = [s.answer for s in endpoint.log if s.role == "hunt-first-edge"]
    clock = [s.answer for s in endpoint.log if s.role == "hunt-clock-edge"]
    opener, burst = first_hit[0], first_hit[1:]
    assert opener.sent < clock[0].sent and clock[-1].done < burst[0].sent  # inside the first-hit key's wait
    assert v.worst.admitted == 40 and hunt_s(endpoint) < 35


def test_a_sliding_counter_is_not_hunted_again_for_a_bound_no_edge_reaches():
    """A sliding counter's bound is 2L, but bursts at one edge get about L: no aimed retry for it."""
    endpoint = VirtualEndpoint("sliding_window_counter", Policy(20, 10.0, None), headers=False)
    v = judge(endpoint, max_wait_s=30)
    assert v.best.model == "sliding_window_counter" and not v.short
    edges = {s.answer.key for s in endpoint.log if s.role in ("hunt-first-edge", "hunt-clock-edge")}
    assert len(edges) == 2  # one try at each edge


FIRST_HIT = Policy(10, 2.0, None)


class BusyFirstHitTry(VirtualEndpoint):
    """A busy moment in the first first-hit try: its burst before the edge is sent once past the
    opener's window (``late``), or the clock hunt meanwhile answers 0.15 s a request (``slow``)."""

    def __init__(self, moment: str) -> None:
        super().__init__("limits_fixed_window", FIRST_HIT, headers=False)
        self.moment = moment

    def send(self, key: int, role: str):
        first_hit = [s.answer for s in self.log if s.role == "hunt-first-edge"]
        if self.moment == "late" and role == "hunt-first-edge" and len(first_hit) == 1:
            self.sleep_until(first_hit[0].sent + FIRST_HIT.window_s + 0.05)
        answer = super().send(key, role)
        if self.moment == "slow" and role == "hunt-clock-edge" and len(first_hit) == 1:
            self.sleep_until(self.now() + 0.15)
        return answer


@pytest.mark.parametrize("moment", ["late", "slow"])
def test_a_first_hit_try_a_busy_moment_spoiled_is_made_again_on_a_fresh_key(moment):
    """The suite's CI once found 10 of slowapi's 19: the clock hunt meanwhile ran past the time of
    the first-hit burst, sent whole in the opener's next window, where a sliding log decides alike;
    the fingerprint then preferred a sliding log, and no first-hit try was made again."""
    endpoint = BusyFirstHitTry(moment)
    v = judge(endpoint, max_wait_s=30)
    assert "limits_fixed_window" in (v.best.model, *v.best.alike)
    opened = [s.answer for s in endpoint.log if s.role == "hunt-first-edge"]
    assert len({a.key for a in opened}) == 2 and v.worst.admitted == 2 * 10 - 1 and v.worst.key != opened[0].key
    if moment == "slow":  # the spoiled key is left at its opener, its burst not sent in vain
        assert sum(a.key == opened[0].key for a in opened) == 1


@pytest.mark.parametrize("limit", [20, 100])
def test_a_limiter_that_counts_refusals_is_learned_without_its_probes_holding_its_quota_back(limit):
    """HAProxy's counter counts refused requests: probed every 5%, a key's quota came back after 2 W,
    and the session took 102 s at W = 10 s. Its first key's fingerprint has a window half that
    return: the second key starts at once, is probed first a window after its burst, and the
    refill bursts are sent while it waits."""
    endpoint = VirtualEndpoint("haproxy_freq_ctr", Policy(limit, 10.0, None), headers=False)
    v = judge(endpoint, max_wait_s=30)
    assert v.best.model == "haproxy_freq_ctr" and (round(v.best.policy.limit), v.best.policy.window_s) == (limit, 10.0)
    first, second = ([s.answer for s in endpoint.log if s.answer.key == k] for k in ("k1", "k2"))
    probes = [s.answer for s in endpoint.log if s.role == "probe" and s.answer.key == "k2"]
    assert second[0].sent - first[-1].done < 10.0 and len(probes) == 1
    assert 10.0 * 1.05 <= probes[0].sent - second[0].sent < 11.0 and probes[0].allowed
    assert hunt_s(endpoint) < 60

