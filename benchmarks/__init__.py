"""The suite's own benchmarks, each reachable as `run_bench.py bench NAME`."""
