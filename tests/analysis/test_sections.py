"""The comparison table ranks limiters by their marginal CPU per request against the `none` run on
the same store, only where the two intervals are apart; the whole-process figure, which measures
the idle process, ranks nothing."""

from __future__ import annotations

from analysis.sections import BELOW_RESOLUTION, WITHIN_NOISE, comparisons, cpu_note
from analysis.spread import group


def row(algorithm: str, store: str, whole: float, marginal: tuple[float, float, float] | None) -> dict:
    us, low, high = marginal or (None, None, None)
    return {"run": f"unhealthy_downstream__{algorithm}__{store}", "scenario": "unhealthy_downstream", "algorithm": algorithm,
            "store": store, "system": "suite", "limit": 100.0, "window_s": 1.0, "burst": 100.0, "repeat": None,
            "cpu_target_ms_per_1k": whole, "cpu_target_us_per_req": us, "cpu_target_us_per_req_low": low,
            "cpu_target_us_per_req_high": high, "latency_p99_intended_ms": 100.0, "rejected_rate": 0.0,
            "cpu_sample_s": 0.5, "cpu_target_resolution_ms_per_1k": 16.7}


def test_marginal_cpu_overhead_is_against_none_on_the_same_store_and_only_beyond_noise():
    rows = [row("none", "memory", 600.0, (100.0, 95.0, 105.0)), row("gcra", "memory", 640.0, (130.0, 125.0, 135.0)),
            row("none", "redis", 900.0, (200.0, 190.0, 210.0)), row("gcra", "redis", 1500.0, (210.0, 200.0, 220.0)),
            row("token_bucket", "memory", 610.0, None)]
    header, body = comparisons(group(rows))["unhealthy_downstream"]
    cell = {(r[0], r[1]): dict(zip(header, r)) for r in body}
    overhead = {k: c["marginal CPU vs none (%)"] for k, c in cell.items()}
    assert overhead == {("none", "memory"): "n/a", ("gcra", "memory"): "+30", ("none", "redis"): "n/a",
                        ("gcra", "redis"): WITHIN_NOISE,  # 1,500 vs 900 ms per 1,000 requests ranks nothing
                        ("token_bucket", "memory"): "n/a"}
    assert cell[("gcra", "memory")]["marginal CPU (µs / req)"] == "130.0 (125.0-135.0)"
    assert cell[("token_bucket", "memory")]["marginal CPU (µs / req)"] == BELOW_RESOLUTION
    assert cell[("token_bucket", "memory")]["target CPU (ms / 1k req)"] == "610.0"


def test_the_cpu_note_states_the_samplers_resolution():
    note = cpu_note(group([row("none", "memory", 600.0, None), row("gcra", "memory", 640.0, (130.0, 125.0, 135.0))]))
    assert "every 0.5 s per process, in 10 ms clock ticks" in note
    assert "one tick is 16.7 ms per 1,000 requests" in note
    assert f"{BELOW_RESOLUTION} where that interval is wider than 50% of the figure (1 of 2 runs)" in note
