"""The fingerprint on hand-computed decisions: which model repeats them, and the fit of L and W."""

from __future__ import annotations

from harness.sim.fingerprint import Seen, agreement, fingerprint, first_runs, readmissions
from targets.algorithms import Policy

EDGE = 1_764_000_000.0  # a multiple of 1 s and of 2 s since the epoch


def seq(*rows: tuple[float, str, bool]) -> list[Seen]:
    return [Seen(EDGE + t, key, allowed) for t, key, allowed in rows]


# L = 2 per 1 s. Key a opens at 0.5: two admitted, the third refused; at 1.0 (a clock edge) it is
# admitted again (a clock-aligned window), at 1.4 refused (a first-hit window would have opened
# at 0.5 and counted 0.5 .. 1.5: 3 of 2, all refused until 1.5).
ALIGNED = seq((0.5, "a", True), (0.6, "a", True), (0.7, "a", False), (1.0, "a", True), (1.1, "a", True),
              (1.4, "a", False))


def test_agreement_counts_the_decisions_a_model_repeats():
    assert agreement("fixed_window", Policy(2, 1.0), ALIGNED) == 6
    # limits' window opened at 0.5 refuses 1.0 and 1.1 (and counts the refusals), admits nothing else new
    assert agreement("limits_fixed_window", Policy(2, 1.0), ALIGNED) == 4
    assert agreement("sliding_log", Policy(2, 1.0), ALIGNED) == 4  # 0.5 and 0.6 still inside (0.0, 1.1]
    assert agreement("fixed_window", Policy(2, 1.0), ALIGNED, misses=0) == 6
    assert agreement("sliding_log", Policy(2, 1.0), ALIGNED, misses=1) == -1  # dropped at its second miss


def trip(t: float, key: str, allowed: bool, sent: float, done: float) -> Seen:
    return Seen(EDGE + t, key, allowed, EDGE + done, EDGE + sent)


def test_a_decision_is_repeated_anywhere_in_its_round_trip_only_when_asked():
    # L = 2 per 1 s, clock-aligned. The third request is estimated at 0.999 (window full: refused)
    # but its round trip runs past the edge: the limiter admitted it at 1.0 or later, as the model
    # does at its answer (1.003); the window it opened then holds one more (1.1).
    rows = [trip(0.1, "a", True, 0.099, 0.101), trip(0.2, "a", True, 0.199, 0.201),
            trip(0.999, "a", True, 0.998, 1.003), trip(1.1, "a", True, 1.099, 1.101)]
    assert agreement("fixed_window", Policy(2, 1.0), rows) == 3
    assert agreement("fixed_window", Policy(2, 1.0), rows, within_round_trip=True) == 4
    # a refusal the model admits at the estimate is repeated at the round trip's start, the fuller window
    refused = [trip(0.1, "b", True, 0.09, 0.11), trip(0.5, "b", True, 0.49, 0.51), trip(1.001, "b", False, 0.999, 1.003)]
    assert agreement("fixed_window", Policy(2, 1.0), refused) == 2
    assert agreement("fixed_window", Policy(2, 1.0), refused, within_round_trip=True) == 3
    # a third admission inside one window at every time of its round trip contradicts the model still
    over = [trip(0.1, "c", True, 0.09, 0.11), trip(0.2, "c", True, 0.19, 0.21), trip(0.3, "c", True, 0.29, 0.31)]
    assert agreement("fixed_window", Policy(2, 1.0), over, within_round_trip=True) == 2


def test_what_the_decisions_show_seeds_the_search():
    assert first_runs(ALIGNED) == [2]
    assert readmissions(ALIGNED) == [(EDGE + 0.5, EDGE + 1.0)]


def test_the_fingerprint_names_the_clock_aligned_window_and_its_numbers():
    best = fingerprint(ALIGNED, limit_hint=2, window_hints=[1.0])[0]
    assert (best.model, best.policy.limit, best.policy.window_s, best.agreed) == ("fixed_window", 2, 1.0, 6)
    assert best.sentence().startswith("behaves like a fixed window of 2 per 1 s aligned to the clock: 100.0% of 6 "
                                      "decisions (as well: sliding_log")  # six decisions: others fit at other W


def test_a_first_hit_window_is_told_from_a_clock_aligned_one():
    # L = 2 per 1 s opened at 0.5: refused at 1.2 (the clock window would admit), admitted at 1.5
    # and key c opened at 0.2: refused at 1.1 (a clock window would admit), admitted at 1.25
    first_hit = seq((0.5, "b", True), (0.6, "b", True), (0.7, "b", False), (1.2, "b", False), (1.5, "b", True),
                    (1.6, "b", True), (1.7, "b", False), (0.2, "c", True), (0.3, "c", True), (0.4, "c", False),
                    (1.1, "c", False), (1.25, "c", True))
    best = fingerprint(first_hit, limit_hint=2, window_hints=[1.0], models=("fixed_window", "limits_fixed_window"))[0]
    assert (best.model, best.policy.limit, best.policy.window_s) == ("limits_fixed_window", 2, 1.0)
    assert "fixed_window" not in best.alike
