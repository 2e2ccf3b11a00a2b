"""Children die with their parent: a real ``run_bench.py run`` (``benchmarks.orphans.CAMPAIGN``: a
node of two server processes on the runner's own redis-server, two Locust workers, an nginx peer)
SIGKILLed at five moments of its campaign drawn from a seeded RNG; every process it had started
(its tree recorded just before the kill, and any process naming the results folder) is gone
within 10 s, and no port that tree listened on is still listening."""

from __future__ import annotations

import os
import shutil

import pytest

from benchmarks.orphans import killed_at, moments

MOMENTS = 5
GONE_WITHIN_S = 30.0
"""Generous for a busy machine: the 2 s goal is `run_bench.py bench orphans`' to time."""

pytestmark = [pytest.mark.process,  # a live campaign, its children, and their kill
              pytest.mark.skipif(not (shutil.which("redis-server") and shutil.which("nginx"))
                                 and os.environ.get("CI", "").lower() != "true",  # CI: missing is a failure
                                 reason="needs redis-server and nginx")]


@pytest.mark.parametrize("moment", moments(MOMENTS, seed=41))
def test_sigkill_of_the_runner_leaves_no_process_and_no_port(tmp_path, moment):
    killed = killed_at(moment, tmp_path, GONE_WITHIN_S)
    assert not killed.left, f"killed at {moment:.1f} s with {killed.children} children: {killed.left}"
