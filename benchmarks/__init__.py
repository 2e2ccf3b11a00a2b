"""The suite's own benchmarks, each reachable as ``run_bench.py bench NAME [ARGS]``.

Each module parses its own ARGS (``run_bench.py bench NAME --help``) in ``main(argv)`` and prints
its figures side by side with their comparison, measured in the same run. The registry names
modules, not functions, so that listing them imports none.
"""

BENCHMARKS: dict[str, tuple[str, str]] = {
    "core": ("benchmarks.core", "decisions/s per algorithm vs the limits library; the simulator's replay rate"),
    "live": ("benchmarks.live", "the load generator's ceiling and a burst's spread at the target"),
    "targets": ("benchmarks.targets", "throughput of every target vs the `none` target (wrk; --instructions: valgrind)"),
    "redis": ("benchmarks.redis_store", "Redis decisions/s vs limits (sync, async, 64 clients); round trips per mode"),
    "analysis-10m": ("benchmarks.analysis_10m", "the report of a 10-million-row results folder: wall time, peak memory"),
}
"""NAME -> (module, what it measures)."""
