"""The suite's own benchmarks, each reachable as ``run_bench.py bench NAME [ARGS]`` (the registry:
``harness/cli/benchmarks.py``). Each module has ``main(argv)``; nothing of the project imports them."""
