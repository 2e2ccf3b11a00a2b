"""The noise models `compare` judges a change by: each returns the one-sided p-value that B's
figure is above A's by chance alone, so a gate can call a change only beyond the noise.

Counts are binomial or Poisson (one run measures its own noise); figures with no such model
(latency, CPU) take their noise from repeats, or from the interval one run measured itself.
``scipy.stats`` is imported where it is used: at the top it cost every command ~0.6 s at start.
A family of tests is judged at CONFIDENCE together (Bonferroni): a gate of 250 figures at 95%
each would fail a third of identical pairs; at 95% family-wise it fails about one in twenty.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

CONFIDENCE = 0.95
"""Family-wise: the chance that a comparison of identical systems calls no change at all."""


def alpha_each(tests: int) -> float:
    """Each test's level so that ``tests`` of them together keep CONFIDENCE (Bonferroni)."""
    return (1.0 - CONFIDENCE) / max(tests, 1)


def proportion_rise(ka: int, na: int, kb: int, nb: int) -> float:
    """P-value that kb/nb is above ka/na: the two-proportion z-test with the pooled share (each
    request a Bernoulli trial). Equal shares or no variance at all: 1.0 (nothing rose)."""
    from scipy import stats

    pooled = (ka + kb) / (na + nb)
    se = math.sqrt(pooled * (1.0 - pooled) * (1.0 / na + 1.0 / nb))
    diff = kb / nb - ka / na
    if se == 0.0:
        return 0.0 if diff > 0 else 1.0
    return float(stats.norm.sf(diff / se))


def count_rise(ma: float, mb: float) -> float:
    """P-value that a Poisson count mb is above ma: given their sum, mb is Binomial(sum, 1/2) when
    both have one rate (the exact conditional test). Counts are rounded to whole units."""
    from scipy import stats

    a, b = round(ma), round(mb)
    if a + b == 0:
        return 1.0
    return float(stats.binom.sf(b - 1, a + b, 0.5))


def repeats_rise(a: Sequence[float], b: Sequence[float], unit: float = 0.0) -> float:
    """P-value that B's repeats have a higher mean than A's: Welch's t-test (two runs or more a
    side). A figure counted in whole ``unit``s is known to no better than its rounding (standard
    deviation unit / sqrt(12)), so two seeds that tie by chance do not read as no noise at all.
    Repeats that agree on both sides with no unit (to float rounding): any rise is real (0.0)."""
    from scipy import stats

    va, vb = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    floor = unit / math.sqrt(12.0)
    sa, sb = (max(floor, 0.0 if np.allclose(v, v[0], rtol=1e-9, atol=0) else float(np.std(v, ddof=1))) for v in (va, vb))
    if sa == sb == 0.0:
        return 0.0 if vb.mean() > va.mean() else 1.0
    return float(stats.ttest_ind_from_stats(vb.mean(), sb, len(vb), va.mean(), sa, len(va), equal_var=False,
                                            alternative="greater").pvalue)


def intervals_rise(a: float, a_interval: tuple[float, float], b: float, b_interval: tuple[float, float]) -> float:
    """P-value that b is above a, each with its own 95% interval (normal: half-width / 1.96 is
    its standard error). Intervals of no width: the figures are exact (0.0 when b is above)."""
    from scipy import stats

    z95 = float(stats.norm.ppf(0.975))
    se = math.hypot((a_interval[1] - a_interval[0]) / (2 * z95), (b_interval[1] - b_interval[0]) / (2 * z95))
    if se == 0.0:
        return 0.0 if b > a else 1.0
    return float(stats.norm.sf((b - a) / se))
