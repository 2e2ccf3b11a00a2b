"""The instruction benchmark's client serves a target an exact number of requests (the counted
work must be the same in both runs), and refuses a policy that rejects."""

from __future__ import annotations

import httpx
import pytest

from benchmarks.targets_instructions import serve


def test_serves_exactly_the_requests_asked_for(start):
    target = start("--algorithm", "fixed_window", "--limit", "1e9", "--window", "1", "--service-ms", "0")
    serve(target.port, 320)
    counters = httpx.get(target.admin_url + "/_bench/counters", timeout=10).json()
    assert counters["limits"]["per-client"]["decisions"] == 320
    assert counters["downstream"]["calls"] == 320


def test_a_rejecting_policy_is_an_error(start):
    target = start("--algorithm", "fixed_window", "--limit", "5", "--window", "60", "--cost", "reports=1", "--service-ms", "0")
    with pytest.raises(RuntimeError, match="must not reject"):
        serve(target.port, 64)
