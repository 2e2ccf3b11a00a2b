"""The hostile-input corpus (``hostile_corpus``, 1,200 generated cases, fixed seed) against one
real target over raw sockets: no answer is a 5xx, the process never exits, every complete
request gets an answer or a close (a read never waits the whole 1 s socket timeout), and a
normal request is answered afterwards."""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from hostile_corpus import corpus

from benchmarks.raw_http import exchange, request

ARGS = ["--trusted-proxies", "1", "--max-keys", "200", "--limit", "20", "--window", "1", "--cost", "reports=1",
        "--service-ms", "0", "--head-timeout", "2"]
WAIT_S = 1.0
"""Socket timeout for each read of an answer owed (a bound on waiting, not a latency goal)."""
INCOMPLETE_WAIT_S = 0.2
"""Bytes that end inside a request: read this long for anything the server says early."""


def test_the_hostile_corpus_gets_no_5xx_no_exit_and_an_answer_or_close_for_every_complete_request(start):
    target = start(*ARGS)
    cases = corpus()
    assert len(cases) >= 1000 and sum(c.answers > 0 for c in cases) >= 1000

    def run(case):
        return case, exchange(target.port, case.data, case.answers, WAIT_S if case.answers else INCOMPLETE_WAIT_S)

    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(run, cases))
    five_xx = [(c.name, c.data[:100], o.statuses) for c, o in outcomes if any(s >= 500 for s in o.statuses)]
    unanswered = [(c.name, c.data[:100], o) for c, o in outcomes if c.answers and o.timed_out]
    assert five_xx == []
    assert unanswered == []
    assert target.process.poll() is None
    statuses = Counter(s for _, o in outcomes for s in o.statuses)
    assert {200, 400, 429, 431} <= set(statuses)  # the corpus reaches the routes, the limiter and both refusals
    assert exchange(target.port, request(x_api_key="after-the-corpus"), timeout_s=5).statuses == [200]
    stderr = target.stderr()
    assert "Traceback" not in stderr and "Exception in ASGI" not in stderr
