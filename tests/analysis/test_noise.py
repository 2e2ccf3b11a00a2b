"""The noise models of `compare` on hand-computed counts (analysis/noise.py)."""

from __future__ import annotations

import math

import pytest

from analysis.noise import CONFIDENCE, alpha_each, count_rise, intervals_rise, proportion_rise, repeats_rise


def test_two_back_to_back_smoke_runs_are_within_the_binomial_noise() -> None:
    # 24 then 26 legitimate rejections of 35: pooled share 50/70 = 5/7, standard error
    # sqrt(5/7 x 2/7 x 2/35) = sqrt(20/1715); the rise 2/35 over it is z = sqrt(0.28) = 0.529
    assert proportion_rise(24, 35, 26, 35) == pytest.approx(0.29835, abs=1e-5)
    assert proportion_rise(26, 35, 24, 35) == pytest.approx(1 - 0.29835, abs=1e-5)
    assert proportion_rise(0, 10, 0, 10) == 1.0  # no variance and no rise
    # 0 of 400 then 40 of 400: pooled 1/20, se sqrt(0.05 x 0.95 / 200) = 0.01541, z = 0.1 / 0.01541 = 6.49
    assert proportion_rise(0, 400, 40, 400) == pytest.approx(4.3e-11, rel=0.05)


def test_a_poisson_count_is_judged_given_the_sum() -> None:
    assert count_rise(2, 4) == 22 / 64  # P(X >= 4), X ~ Binomial(6, 1/2): (15 + 6 + 1) / 64
    assert count_rise(0, 3) == 1 / 8
    assert count_rise(4, 2) == 57 / 64  # P(X >= 2) = 1 - (1 + 6) / 64
    assert count_rise(0, 0) == 1.0
    assert count_rise(1.6, 2.4) == count_rise(2, 2)  # whole units: 1 - P(X <= 1) = 11/16
    assert count_rise(2, 2) == 11 / 16


def test_repeats_are_judged_by_welchs_t() -> None:
    # means 2 and 3, variances 1: t = 1 / sqrt(2/3) = sqrt(1.5), df = 4;
    # P(T4 > t) = 1/2 - (3/4) (t / sqrt(4 + t^2)) (1 - t^2 / (3 (4 + t^2)))
    t = math.sqrt(1.5)
    by_hand = 0.5 - 0.75 * t / math.sqrt(4 + t * t) * (1 - t * t / (3 * (4 + t * t)))
    assert repeats_rise([1, 2, 3], [2, 3, 4]) == pytest.approx(by_hand, rel=1e-9)
    assert by_hand == pytest.approx(0.14393, abs=1e-5)
    assert repeats_rise([2.0, 2.0], [2.4, 2.4]) == 0.0  # no noise at all: the rise is real
    assert repeats_rise([2.0, 2.0], [2.0, 2.0]) == 1.0
    assert repeats_rise([2.4, 2.4], [2.0, 2.0]) == 1.0


def test_a_count_that_ties_across_seeds_keeps_its_rounding_noise() -> None:
    # 1.4 twice, then 1.7 twice, in units of 0.1 (1/L, L = 10): each side's deviation 0.1 / sqrt(12),
    # se = 0.1 / sqrt(12), t = 3 sqrt(12) = 10.39, df = 2; P(T2 > t) = 1/2 - t / (2 sqrt(2 + t^2))
    t = 3 * math.sqrt(12)
    assert repeats_rise([1.4, 1.4], [1.7, 1.7], unit=0.1) == pytest.approx(0.5 - t / (2 * math.sqrt(2 + t * t)), rel=1e-9)
    assert repeats_rise([1.4, 1.4], [1.7, 1.7], unit=0.1) == pytest.approx(0.004566, abs=1e-6)


def test_one_run_a_side_is_judged_by_its_own_intervals() -> None:
    # half-widths 1.96 x 1.0: standard errors 1 each, z = 3 / sqrt(2) = 2.121
    assert intervals_rise(100, (98.04, 101.96), 103, (101.04, 104.96)) == pytest.approx(0.016947, abs=1e-5)
    assert intervals_rise(106.0, (106.0, 106.0), 159.0, (159.0, 159.0)) == 0.0  # exact figures
    assert intervals_rise(106.0, (106.0, 106.0), 106.0, (106.0, 106.0)) == 1.0


def test_the_family_keeps_its_confidence() -> None:
    assert CONFIDENCE == 0.95
    assert alpha_each(10) == pytest.approx(0.005)
    assert alpha_each(0) == pytest.approx(0.05)
