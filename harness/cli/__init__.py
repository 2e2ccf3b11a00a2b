"""The one command line (`run_bench.py`): one module per command group."""
