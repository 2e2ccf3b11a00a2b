"""Degraded is not ok: which completed runs are ``degraded`` and why (failed requests, decisions
from a fallback unless the scenario stopped the store on purpose), and what follows: ``run`` exits
1 unless ``--allow-degraded`` (the analysis side: tests/analysis/test_degraded_runs.py)."""

from __future__ import annotations

import pandas as pd

from harness.cli.run import degraded_exit
from harness.live.measures import degraded_reasons, failed_requests

FALLBACK = {"share": 0.25, "decisions": 5, "of": 20, "sources": {"fallback": 5}, "start_t": 1.0, "end_t": 2.0}


def _client(statuses: list[int], t: list[float] | None = None) -> pd.DataFrame:
    return pd.DataFrame({"intended_t": t or [float(i) for i in range(len(statuses))], "status": statuses})


def test_failed_requests_are_no_answer_and_every_status_but_2xx_and_429() -> None:
    failed = failed_requests(_client([200, 201, 204, 429, 0, 0, 503, 404, 200, 200]), [])
    assert failed == {"count": 4, "of": 10, "share": 0.4, "statuses": {"0": 2, "404": 1, "503": 1}}
    assert failed_requests(_client([200, 429, 429]), []) is None


def test_failures_inside_the_runs_phases_are_the_scenarios_own() -> None:
    outage = [{"name": "downstream_outage", "start_t": 2.0, "end_t": 4.0}]
    assert failed_requests(_client([200, 200, 503, 503, 200]), outage) is None
    assert failed_requests(_client([200, 200, 503, 503, 503]), outage)["statuses"] == {"503": 1}  # t = 4: after it


def test_why_a_run_is_degraded_each_reason_with_its_share() -> None:
    failed = failed_requests(_client([200, 0, 503, 200]), [])
    assert degraded_reasons({"store": "redis-shared", "degraded": FALLBACK, "failed_requests": failed}, False) == [
        "25.0% of its decisions came from a fallback, not redis-shared",
        "2 of 4 requests (50.0%) failed: no answer 1, 503 1"]
    assert degraded_reasons({"store": "memory", "degraded": None, "failed_requests": None}, False) == []


def test_a_store_failure_scenario_expects_its_fallback_but_not_failed_requests() -> None:
    assert degraded_reasons({"store": "redis-shared", "degraded": FALLBACK, "failed_requests": None}, True) == []
    failed = failed_requests(_client([200, 0]), [])
    assert degraded_reasons({"store": "redis-shared", "degraded": FALLBACK, "failed_requests": failed}, True) == [
        "1 of 2 requests (50.0%) failed: no answer 1"]


def test_run_exits_1_for_a_degraded_run_unless_allowed() -> None:
    assert degraded_exit([{"status": "degraded"}], allowed=False) == 1
    assert degraded_exit([{"status": "degraded"}], allowed=True) == 0
    assert degraded_exit([], allowed=False) == 0
