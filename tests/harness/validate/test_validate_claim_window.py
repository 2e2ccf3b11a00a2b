"""``validate --url``'s worst-case row counts in the claimed window, never the fitted one: a claim
of L per W is a promise about any W, whatever window the limiter keeps (hand-made answers)."""

from __future__ import annotations

from collections import Counter

import yaml

from analysis.header_truth import Answer, header_truth
from analysis.worst_case import worst_case
from harness.campaign.policy_file import parse_policy
from harness.judge.verdict import Verdict
from harness.sim.fingerprint import Fit
from harness.validate.measured import claim_verdicts
from targets.algorithms import Policy

T0 = 1_764_000_000.0


def burst(key: str, start: float, n: int, refused: bool = True) -> list[Answer]:
    """``n`` admitted 10 ms apart from ``start``, then one refused."""
    out = [Answer(key, start + i / 100, start + i / 100 + 0.002, 200) for i in range(n)]
    return out + ([Answer(key, start + n / 100, start + n / 100 + 0.002, 429)] if refused else [])


def test_the_worst_case_row_counts_in_the_claimed_window():
    # a sliding log of 10 per 1 s, seen as such: two bursts of 10, 1.5 s apart, on one key
    answers = burst("k1", T0, 10) + burst("k1", T0 + 1.5, 10)
    fit = Fit("sliding_log", Policy(10, 1.0), len(answers), len(answers))
    v = Verdict([fit], worst_case(answers, 1.0), header_truth(answers), Counter(), 3.0, None)
    assert v.worst.admitted == 10  # in the fitted window: what the row once compared with the claim

    def row(limit: int, window_s: float) -> tuple[bool, str]:
        text = (f"name: c\nroutes: [{{name: GET /api/items}}]\nlimits: [{{name: api, key: ip, "
                f"algorithm: sliding_log, limit: {limit}, window_s: {window_s:g}}}]\n")
        rows = claim_verdicts(parse_policy(yaml.safe_load(text), "c.yaml"), v, answers)
        worst = next(r for r in rows if r.metric == "live_measured_worst_case")
        return worst.passed, worst.message

    passed, said = row(10, 3.0)  # "10 in any 3 s": 20 were admitted within 1.6 s
    assert not passed and said.startswith("at most 20 admitted to one key within 1.592 s"), said
    assert row(20, 3.0)[0] and row(10, 1.0)[0]
