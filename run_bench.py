#!/usr/bin/env python3
"""ratelimit-bench: the one CLI. Run ``python run_bench.py --help``."""

import sys

from harness.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
