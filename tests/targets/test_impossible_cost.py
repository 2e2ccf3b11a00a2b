"""A default route never stops a target from starting: with ``--limit 5`` the reports route's
default cost of 20 can never be admitted, so the target warns once on stderr and answers such a
request with a 429 whose problem details say waiting will not help (no Retry-After, no reset)."""

from __future__ import annotations

import httpx
import pytest

from targets.headers import NEVER_TYPE


@pytest.mark.parametrize("algorithm", [[], ["--algorithm", "fixed_window"], ["--algorithm", "gcra"]])
def test_a_default_cost_above_the_limit_starts_warns_once_and_answers_429(start, algorithm):
    target = start(*algorithm, "--limit", "5", "--window", "86400")  # a day: no window edge mid-test
    items = httpx.get(target.url + "/api/items", timeout=10)
    assert items.status_code == 200 and items.headers["x-ratelimit-remaining"] == "4"
    for _ in range(3):
        r = httpx.post(target.url + "/api/reports", timeout=10)
        assert r.status_code == 429
        assert r.headers["content-type"] == "application/problem+json"
        assert r.headers["ratelimit-policy"] == '"per-client";q=5;w=86400' and r.headers["x-ratelimit-limit"] == "5"
        for misleading in ("retry-after", "ratelimit", "x-ratelimit-remaining", "x-ratelimit-reset"):
            assert misleading not in r.headers, misleading
        body = r.json()
        assert body["type"] == NEVER_TYPE and body["status"] == 429
        assert body["limit"] == "per-client" and body["cost"] == 20 and body["max_cost"] == 5
        assert "costs 20" in body["detail"] and "waiting will not help" in body["detail"]
        assert "retry_after_s" not in body
    # the rejected reports consumed nothing
    assert httpx.get(target.url + "/api/items", timeout=10).headers["x-ratelimit-remaining"] == "3"
    warnings = [line for line in target.stderr().splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, target.stderr()
    assert warnings[0].startswith("warning: routes.reports.cost: the default cost 20 can never be admitted by per-client "
                                  "(at most 5 per request): POST /api/reports will answer 429")
