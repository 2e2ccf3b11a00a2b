"""The target's marginal CPU per request: the slope of CPU against requests decided over the
sampler's bins, hand-computed on exact bins, refused where the bins cannot resolve it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.cpu import CLOCK_TICK_S, cpu_ms_per_1k, marginal_cpu, target_bins

T0 = 1_700_000_000.0


def cpu_frame(busy_s: list[float], interval_s: float = 0.5, processes: int = 1) -> pd.DataFrame:
    """cpu.csv of ``processes`` target processes (each busy_s / processes per bin) and a generator."""
    rows = []
    for p in range(processes):
        for i, busy in enumerate([0.0, *busy_s]):  # psutil's first sample covers nothing
            rows.append((T0 + i * interval_s, f"target:node-{p}", "target", 100.0 * busy / processes / interval_s, 1))
    rows += [(T0 + i * interval_s, "locust", "generator", 50.0, 1) for i in range(len(busy_s) + 1)]
    return pd.DataFrame(rows, columns=["t", "process", "role", "cpu_percent", "rss_bytes"])


def decided(counts: list[int], interval_s: float = 0.5) -> np.ndarray:
    """``counts[i]`` decisions spread inside bin i, (T0 + i * interval, T0 + (i + 1) * interval]."""
    return np.concatenate([T0 + (i + (np.arange(n) + 0.5) / n) * interval_s for i, n in enumerate(counts) if n])


def test_exact_bins_give_the_slope_and_the_idle_process_as_intercept():
    counts = [50, 100, 200, 300, 400, 500]
    busy = [0.5 * 0.02 + n * 300e-6 for n in counts]  # 20 ms of CPU per idle second, 300 us a request
    row = marginal_cpu(cpu_frame(busy, processes=2), decided(counts))
    assert row["cpu_target_us_per_req"] == pytest.approx(300.0, abs=0.01)
    assert row["cpu_target_us_per_req_low"] == pytest.approx(300.0, abs=0.01)  # no residual: a zero-width interval
    assert row["cpu_target_idle_ms_per_s"] == pytest.approx(20.0, abs=0.01)
    assert row["cpu_sample_s"] == 0.5
    assert row["cpu_target_resolution_ms_per_1k"] == pytest.approx(2 * CLOCK_TICK_S * 1e6 / sum(counts), abs=0.001)
    # the whole-process figure of the same run: the idle second is spread over the requests
    whole = cpu_ms_per_1k(cpu_frame(busy), sum(counts))["cpu_target_ms_per_1k"]
    assert whole == pytest.approx((3 * 0.02 + sum(counts) * 300e-6) * 1e6 / sum(counts), abs=0.01)
    assert whole > 300e-3 * 1000


def test_two_processes_read_at_one_instant_are_one_bin():
    bins = target_bins(cpu_frame([0.1, 0.2], processes=2))
    assert bins["busy"].round(6).tolist() == [0.1, 0.2] and (bins["end"] - bins["start"]).tolist() == [0.5, 0.5]


def test_the_same_count_in_every_bin_resolves_nothing():
    counts = [100] * 8
    row = marginal_cpu(cpu_frame([0.01 + n * 100e-6 for n in counts]), decided(counts))
    assert row["cpu_target_us_per_req"] is None and row["cpu_target_idle_ms_per_s"] is None
    assert row["cpu_sample_s"] == 0.5  # the sampler's facts are given all the same


def test_bursts_below_the_clock_tick_are_below_resolution():
    """Two bursts of 50 requests at 100 us (5 ms each, half a tick) among idle bins, CPU read in
    whole 10 ms ticks as psutil reads it: the slope's interval is wider than half of it."""
    counts = [0, 50, 0, 0, 50, 0, 0, 0]
    ticks = [0.0, 0.01, 0.0, 0.01, 0.0, 0.0, 0.01, 0.0]  # where the ticks happened to fall
    row = marginal_cpu(cpu_frame(ticks), decided(counts))
    assert row["cpu_target_us_per_req"] is None


def test_one_sample_that_read_cpu_gives_no_figure():
    """All 1,000 requests and the one 5.9% sample in one bin of eight: the line through it fits
    exactly (29.5 us a request, an interval of no width), yet it rests on one sample."""
    counts = [0, 0, 0, 0, 0, 1000, 0, 0]
    row = marginal_cpu(cpu_frame([0.0] * 5 + [0.059 * 0.5, 0.0, 0.0]), decided(counts))
    assert row["cpu_target_us_per_req"] is None and row["cpu_target_us_per_req_low"] is None
    assert row["cpu_target_resolution_ms_per_1k"] == pytest.approx(CLOCK_TICK_S * 1e6 / 1000)  # 10 ms per 1,000


def test_too_few_bins_or_no_samples_give_nothing():
    assert marginal_cpu(cpu_frame([0.1, 0.2, 0.3]), decided([10, 20, 30]))["cpu_target_us_per_req"] is None
    empty = cpu_frame([])
    assert marginal_cpu(empty[empty["role"] == "generator"], decided([10]))["cpu_sample_s"] is None


def test_a_virtual_ramp_gives_back_the_models_cost_per_request(tmp_path):
    """The system model spends exactly cpu_us a request (harness/sim/target_model.py): the slope
    over its CPU samples is that figure, the whole-process one the same here (no idle cost)."""
    from analysis.analyze import analyze
    from analysis.loader import load_results
    from harness.cli.main import main
    from harness.sim.target_model import cpu_us_for

    out = tmp_path / "ramp"
    assert main(["simulate", "--scenario", "ramp", "--algorithm", "token_bucket", "--limit", "100000", "--window", "1",
                 "--scenario-param", "duration_s=10", "--out", str(out)]) == 0
    [row] = analyze(load_results(out)).rows
    assert row["cpu_target_us_per_req"] == pytest.approx(cpu_us_for("token_bucket"), rel=0.02)
    assert row["cpu_target_us_per_req_low"] <= cpu_us_for("token_bucket") <= row["cpu_target_us_per_req_high"]
    assert row["cpu_sample_s"] == 1.0


def test_a_run_below_resolution_is_marked_in_the_chart_not_left_blank(live_folder):
    from analysis.analyze import analyze
    from analysis.charts import BELOW_RESOLUTION, comparison
    from analysis.loader import load_results
    from analysis.pool import InlineExecutor

    runs = analyze(load_results(live_folder), pool=InlineExecutor()).runs
    sampled = [a for a in runs if a.row.get("cpu_target_ms_per_1k") is not None]
    sampled[0].row.update(cpu_target_us_per_req=None, cpu_target_us_per_req_low=None, cpu_target_us_per_req_high=None)
    unresolved = sum(a.row.get("cpu_target_us_per_req") is None for a in sampled)
    cpu_panel = comparison(runs, "t").axes[2]
    assert [t.get_text() for t in cpu_panel.texts] == [BELOW_RESOLUTION] * unresolved
    assert cpu_panel.get_title().endswith(f"{unresolved} runs {BELOW_RESOLUTION} below the sampler's resolution)")
