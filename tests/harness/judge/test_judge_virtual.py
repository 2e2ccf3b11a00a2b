"""The whole judging session against each suite model standing in for an endpoint (virtual time):
the fingerprint names it, the hunt finds its worst case, within the caps."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from analysis.header_truth import header_truth
from analysis.worst_case import WorstCase
from harness.judge.check import Sweep
from harness.judge.endpoint import CapReached, JudgeError
from harness.judge.hunt import NoLimit
from harness.judge.verdict import EDGE_MODELS, HELD_ROLES, Checked, Missed, Verdict, judge, render
from harness.judge.virtual import VirtualEndpoint
from harness.sim.fingerprint import BUCKETED, WINDOWED, Fit
from targets.algorithms import Policy

pytestmark = pytest.mark.slow  # whole judge sessions in virtual time

POLICY = Policy(10, 1.0, 10)
HUNT_ROLES = {"learn", "probe", "check-fields", "hunt-first-edge", "hunt-clock-edge"}
"""The learning and the edge hunts: what a session sent before it predicts, then checks."""
PHASE_KEYS = Counter({"explore-gaps": 1, "explore-ramp": 1, "check-steady": 3, "check-gaps": 2,
                      "check-after-refusals": 1, "hunt-gaps": 1})
"""The keys of the phase after the edge hunts, by role (``harness/judge/check.py``)."""


def hunt_s(endpoint: VirtualEndpoint) -> float:
    """How long the learning and the edge hunts took, from the session's start."""
    return max(s.answer.done for s in endpoint.log if s.role in HUNT_ROLES) - endpoint.start


@pytest.mark.parametrize("model", [*WINDOWED, *BUCKETED])
def test_the_fingerprint_names_each_model_without_headers_and_the_hunt_finds_its_worst_case(model):
    endpoint = VirtualEndpoint(model, POLICY, headers=False)
    v = judge(endpoint, max_wait_s=30)
    assert model in (v.best.model, *v.best.alike)
    assert v.best.agreement >= 0.99
    assert math.isclose(v.best.policy.limit, 10, rel_tol=0.05) and math.isclose(v.best.policy.window_s, 1.0, rel_tol=0.05)
    assert len(endpoint.log) < 1000 and endpoint.now() - endpoint.start < 60
    if model in EDGE_MODELS:  # a burst at the edge doubles these: the hunt must find 1.9x or more
        assert v.ratio >= 1.9
    if v.bound is not None:
        assert v.ratio <= v.bound
    hunted = {s.answer.key for s in endpoint.log if s.role in HUNT_ROLES}
    assert 4 <= len(hunted) <= 5  # learning, each edge hunt (and one more try) on keys of their own
    checked = Counter(s.role for s in {s.answer.key: s for s in endpoint.log if s.role not in HUNT_ROLES}.values())
    assert checked == PHASE_KEYS and v.cut is None  # then the explored and held-back keys, none cut short
    assert v.checked and v.checked[0].decisions == sum(s.role in HELD_ROLES for s in endpoint.log)


def test_header_truth_is_measured_on_answers_that_carry_fields():
    endpoint = VirtualEndpoint("fixed_window", POLICY)
    v = judge(endpoint, max_wait_s=30)
    hunted = header_truth([s.answer for s in endpoint.log if s.role in HUNT_ROLES])
    assert hunted.retry_after.kept == 1 and hunted.retry_after.broken == 0  # the retry sent at Retry-After
    assert v.truth.retry_after.kept > 1 and v.truth.retry_after.broken == 0  # held-back keys retried later too
    assert v.truth.remaining.kept > 10 and v.truth.remaining.broken == 0
    assert v.truth.forms["ietf-list"] == sum(v.roles.values())
    text = "\n".join(render(v, "virtual", "log.csv"))
    assert "fingerprint: behaves like a fixed window of 10 per 1 s aligned to the clock: predicted 100.0% of " in text
    assert "worst case: 20 admitted to one key" in text and "(< W = 1 s, the fitted window): 2.00x the fitted L = 10" in text
    assert "traffic: L just before a multiple of W since the epoch, L just after" in text  # the clock edge's burst


def test_no_limit_and_a_cap_too_small_are_one_line_each():
    with pytest.raises(NoLimit, match="no limit found within 400 requests"):
        judge(VirtualEndpoint("none", POLICY), max_wait_s=30)
    with pytest.raises(JudgeError, match=r"^the request cap was reached after 30 requests, before the window was learned; "
                                         r"raise --max-requests$"):
        judge(VirtualEndpoint("fixed_window", POLICY, max_requests=30), max_wait_s=30)


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


@pytest.mark.parametrize(("first_hit_agreed", "short"), [(99, True), (98, True), (97, False)])
def test_a_first_hit_window_that_fits_nearly_as_well_as_a_sliding_log_is_hunted_again(first_hit_agreed, short):
    """A first-hit try that spilled (a refusal where a new window opens) leaves a first-hit window
    fitting a little worse than a sliding log: 11 of 10 found is short of its 19 while it misses at
    most NEAR_MISSES more decisions than the best fit."""
    fits = [Fit("sliding_log", Policy(10, 2.0, None), 100, 100), Fit("limits_fixed_window", Policy(10, 2.0, None), first_hit_agreed, 100)]
    v = Verdict(fits, WorstCase(11, "k3", 0.0, 1.0), header_truth([]), Counter(), 10.0, None)
    assert v.short == ({"limits_fixed_window"} if short else set())
    assert Verdict(fits, WorstCase(19, "k3", 0.0, 1.0), header_truth([]), Counter(), 10.0, None).short == set()


def test_the_verdict_names_the_bound_that_cut_the_hunt_short():
    fits = [Fit("fixed_window", Policy(10, 1.0, None), 40, 40)]
    lines = {cut.flag: render(Verdict(fits, WorstCase(12, "k3", 0.0, 0.5), header_truth([]), Counter(), 300.0, cut), "u", "l")
             for cut in (CapReached.time(300), CapReached.requests())}
    assert "  the time bound (300 s) ended the hunt early: the worst case may be higher (raise --max-time)" in lines["--max-time"]
    assert "  the request cap ended the hunt early: the worst case may be higher (raise --max-requests)" in lines["--max-requests"]


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


def test_a_fit_that_mispredicts_the_held_back_traffic_is_said_to_explain_nothing():
    """Below 95% of the held-back decisions predicted, the verdict says first that no model in the
    suite explains the limiter, with the key it mispredicted most, and holds the worst case to the
    best fit's figures, labelled so, not to a fitted model's bound."""
    fit = Fit("fixed_window", Policy(10, 1.0, None), 100, 100)
    checked = [Checked(fit, 90, 100), Checked(Fit("sliding_log", Policy(10, 1.0, None), 99, 100), 80, 100)]
    v = Verdict([fit], WorstCase(14, "k1004", 0.0, 0.5), header_truth([]), Counter({"check-gaps": 30}), 10.0, None,
                checked, missed=Missed("k1004", "check-gaps", 14, 10, 3.25),
                sweep=Sweep(first=10, after=[(0.125, 3), (0.25, 10)], whole_gap=0.25),
                shapes={"k1004": "bursts until refused after idle gaps of 0.188/0.75/1.5 s"})
    lines = render(v, "u", "l")
    assert not v.explained and lines[1] == ("no model in the suite explains this limiter: it admitted 14 in 3.2 s "
                                            "where the best fit predicts 10")
    assert lines[2] == ("  the best fit, a fixed window of 10 per 1 s aligned to the clock, predicted 90 of 100 held-back "
                        "decisions (at least 95% needed); fitted on 100: 100")
    assert lines[3] == ("  measured: a fresh key's first burst: 10 admitted; after idle gaps of 0.125 s: 3, 0.25 s: 10; "
                        "the shortest gap found bringing a whole burst back: 0.25 s")
    worst = next(line for line in lines if line.startswith("worst case: "))
    assert "(< W = 1 s, the best fit's (no model fits) window): 1.40x the best fit's (no model fits) L = 10; evidence" in worst
