"""The stateful behaviours (harness/sim/stateful.py) on hand-computed decisions, and each fitted by
the fingerprint with its third parameter."""

from __future__ import annotations

import pytest

from harness.sim.fingerprint import Seen, agreement, extra_seeds, fingerprint
from harness.sim.stateful import STATEFUL
from targets.algorithms import Policy, PolicyError

T0 = 1_764_000_000.0


def decisions(model: str, policy: Policy, extra: float | None, times: list[float]) -> list[bool]:
    """One key's decisions at ``times`` (seconds after T0)."""
    m = STATEFUL[model]
    params, state, out = m.build(policy, extra), None, []
    for t in times:
        decision, state = m.decide(state, T0 + t, 1.0, params)
        out.append(decision.allowed)
    return out


def test_a_forgetful_bucket_comes_back_full_after_its_idle_time_and_not_before():
    # 3 tokens, 1 per second, dropped after 0.5 s idle: a burst of 3, the fourth refused at 0.03;
    # idle 0.45 s: the bucket kept (0.45 tokens back: refused, and the refusal touches it again);
    # idle 0.5 s after that: recreated full, 3 more, then refused
    times = [0.0, 0.01, 0.02, 0.03, 0.48, 0.98, 0.99, 1.0, 1.01]
    got = decisions("forgetful_token_bucket", Policy(3, 3.0, 3), 0.5, times)
    assert got == [True, True, True, False, False, True, True, True, False]
    # the same key without forgetting (a plain bucket): 0.02 tokens left at 0.02, one whole token
    # back at 1.0 only (0.98 s later), the next refused
    plain = decisions("forgetful_token_bucket", Policy(3, 3.0, 3), 100.0, times)
    assert plain == [True, True, True, False, False, False, False, True, False]


def test_a_forgetful_window_starts_over_after_its_idle_time_inside_the_window():
    # 2 per 10 s opened at 0 (refusals count), dropped after 1 s idle: 0 and 0.1 admitted, 0.2
    # refused; 0.9 refused (idle 0.7 s: kept), 1.9 admitted (idle 1.0 s: a new window), 2.0 admitted,
    # 2.1 refused; 9.0 admitted (idle 6.9 s); without forgetting 10.0 would open the next window
    times = [0.0, 0.1, 0.2, 0.9, 1.9, 2.0, 2.1, 9.0]
    assert decisions("forgetful_window", Policy(2, 10.0), 1.0, times) == [True, True, False, False, True, True,
                                                                           False, True]
    assert decisions("forgetful_window", Policy(2, 10.0), 100.0, times) == [True, True, False, False, False,
                                                                             False, False, False]


def test_a_fixed_block_lasts_its_time_from_the_trip_whatever_the_key_does_meanwhile():
    # a log of 2 in any 10 s; the third request (0.2) trips a block of 3 s: refused until 3.2,
    # knocks at 1.0, 2.0, 3.0 do not extend it; at 3.2 the key starts over: 2 admitted, 3.4 trips again
    times = [0.0, 0.1, 0.2, 1.0, 2.0, 3.0, 3.2, 3.3, 3.4, 6.3, 6.4]
    assert decisions("fixed_block", Policy(2, 10.0), 3.0, times) == [True, True, False, False, False, False, True,
                                                                      True, False, False, True]


def test_an_extended_block_lasts_its_time_from_the_last_refused_request():
    # the same requests: each knock in the block restarts its 3 s, so 3.2 (0.2 s after the knock
    # at 3.0) is refused and the block runs to 6.2 + ...: 6.3 is 3.1 s after the knock at 3.3
    times = [0.0, 0.1, 0.2, 1.0, 2.0, 3.0, 3.2, 3.3, 3.4, 6.3, 6.4, 9.5]
    assert decisions("extended_block", Policy(2, 10.0), 3.0, times) == [True, True, False, False, False, False, False,
                                                                         False, False, False, False, True]


def test_a_counting_log_counts_its_refusals_against_the_window():
    # 2 in any 1 s, every request counted: 0, 0.1 admitted, 0.5 refused (counted), 1.05: in
    # (0.05, 1.05] are 0.1, 0.5 and itself: refused; 1.55: 1.05 and itself: admitted (a sliding log
    # of admitted requests only would have admitted 1.05 too)
    times = [0.0, 0.1, 0.5, 1.05, 1.55]
    assert decisions("counting_log", Policy(2, 1.0), None, times) == [True, True, False, False, True]
    plain = [Seen(T0 + t, "k", allowed) for t, allowed in zip(times, [True, True, False, True, True], strict=True)]
    assert agreement("sliding_log", Policy(2, 1.0), plain) == 5
    assert agreement("counting_log", Policy(2, 1.0), plain) == 4


def test_a_stateful_model_needs_its_third_parameter():
    with pytest.raises(PolicyError, match="idle_s must be a positive number"):
        STATEFUL["forgetful_token_bucket"].build(Policy(3, 1.0), None)
    assert agreement("fixed_block", Policy(2, 1.0), [Seen(T0, "k", True)], extra=None) == -1


def seen_of(model: str, policy: Policy, extra: float | None, plan: dict[str, list[float]]) -> list[Seen]:
    return [Seen(T0 + t, key, allowed) for key, times in plan.items()
            for t, allowed in zip(times, decisions(model, policy, extra, times), strict=True)]


def burst(at: float, n: int, pace: float = 0.01) -> list[float]:
    return [round(at + i * pace, 6) for i in range(n)]


@pytest.mark.parametrize(("model", "extra"), [("forgetful_token_bucket", 0.8), ("forgetful_window", 0.8),
                                              ("fixed_block", 1.5), ("extended_block", 1.5)])
def test_the_fingerprint_fits_each_behaviour_with_its_third_parameter(model, extra):
    """Bursts of 6 after idle gaps of 0.4 .. 3 s and knocks between bursts: the behaviour with
    L = 4 per 2 s and its idle time or block, bracketed by the gaps the decisions changed at."""
    policy = Policy(4, 2.0, 4)
    plan = {"a": burst(0, 6) + burst(0.45, 6) + burst(1.35, 6) + burst(2.55, 6) + burst(5.6, 6),
            "b": [*burst(0, 6), 0.5, 1.0, 1.3, 2.0, 2.1, 2.4, *burst(3.2, 6), *burst(3.9, 6), *burst(6.0, 6)]}
    seen = seen_of(model, policy, extra, plan)
    fits = fingerprint(seen, models=(model,))
    fit = fits[0]
    assert fit.model == model and fit.agreed == len(seen), fit.sentence()
    assert fit.policy.limit == 4
    lows = [x for x in extra_seeds(seen, STATEFUL[model].extra) if x <= extra]
    assert fit.extra is not None and abs(fit.extra - extra) <= 0.3, fit.sentence()
    assert lows and f"{fit.extra:.3g} s" in fit.sentence()
