"""``bench judge-products``' own reckoning, without the products: the most admitted in any window
(by hand), the largest a model admits over the bench's traffic grid, and the goals a verdict is
held to (a confident wrong fit is missed; "no model fits" with the worst case found is met)."""

from __future__ import annotations

import numpy as np

from analysis.metrics import max_window_cost
from benchmarks.judge_products import POLICY, largest, row
from targets.algorithms import Policy


def test_the_most_in_any_half_open_window():
    """What ``largest`` counts admitted requests with (``max_window_cost`` at cost 1)."""
    times = np.array([0.0, 0.5, 9.99, 10.0, 10.4, 15.0])
    ones = np.ones(len(times))
    assert max_window_cost(times, ones, 10.0) == 4  # [0.5, 10.5): 0.5, 9.99, 10, 10.4; [0, 10) holds 3
    assert max_window_cost(times, ones, 0.01) == 1 and max_window_cost(np.array([]), np.array([]), 1.0) == 0


def test_the_grid_reaches_each_models_bound():
    policy = Policy(20, 10.0, 20)
    assert largest("fixed_window", policy) == 40  # 2L: a burst on each side of a clock edge
    assert largest("sliding_log", policy) == 20  # L in any W, whatever the traffic
    assert largest("token_bucket", policy) == 39  # B + rW = 40 is the bound: the grid comes within one request


def _doc(model: str, explained: bool, fitted: float, worst: int, limit: float = 20, window_s: float = 10.0,
         burst: float = 20) -> dict:
    return {"requests": 300, "error": None, "verdict": {
        "model": model, "limit": limit, "window_s": window_s, "burst": burst, "explained": explained,
        "fitted_agreement": fitted, "held_back_agreement": 0.9, "worst_admitted": worst}}


def test_a_confident_wrong_fit_misses_and_no_model_fits_with_the_worst_case_found_is_met():
    # Traefik (a bucket forgotten after 2 idle seconds) once judged "a sliding log of 22 in 1.5 s" at 1.00x
    wrong = row("traefik", POLICY, _doc("sliding_log", True, 0.99, 22, 22, 1.5), 40.0)
    assert wrong[3] == "no" and wrong[-1] == "MISSED"
    honest = row("traefik", POLICY, _doc("token_bucket", False, 0.8, 110), 40.0)
    assert honest[2].startswith("no model fits") and honest[4] == "110 / 120 (92%)" and honest[-1] == "met"
    named = row("traefik", POLICY, _doc("traefik_rate", True, 1.0, 100), 40.0)
    assert named[3] == "yes" and named[-1] == "MISSED"  # right, but 100 of 120 is under 90%
    assert row("traefik", POLICY, _doc("traefik_rate", True, 1.0, 110), 130.0)[-1] == "MISSED"  # past 120 s


def test_one_counter_for_everyone_is_envoys_right_answer():
    said = {"requests": 60, "verdict": None, "error": "a client refused after 20 admitted; ... one counter for everyone, or"}
    envoy, nginx = row("envoy", POLICY, said, 20.0), row("nginx", POLICY, said, 20.0)
    assert envoy[3] == "yes" and envoy[-1] == "met"
    assert nginx[3] == "no" and nginx[-1] == "MISSED"
