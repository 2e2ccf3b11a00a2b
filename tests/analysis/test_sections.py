"""The comparison table's CPU overhead is against the `none` run on the same store."""

from __future__ import annotations

from analysis.sections import comparisons


def row(algorithm: str, store: str, cpu: float) -> dict:
    return {"scenario": "unhealthy_downstream", "algorithm": algorithm, "store": store, "cpu_target_ms_per_1k": cpu,
            "latency_p99_intended_ms": 100.0, "rejected_rate": 0.0}


def test_cpu_overhead_is_against_the_none_run_of_the_same_store():
    rows = [row("none", "memory", 100.0), row("gcra", "memory", 110.0), row("none", "redis", 200.0), row("gcra", "redis", 250.0)]
    header, body = comparisons(rows)["unhealthy_downstream"]
    overhead = {(r[0], r[1]): r[header.index("CPU vs none (%)")] for r in body}
    assert overhead == {("none", "memory"): "+0", ("gcra", "memory"): "+10", ("none", "redis"): "+0", ("gcra", "redis"): "+25"}
