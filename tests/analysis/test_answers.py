"""The answer sentences come from summary rows: exact sentences on hand-made rows, a changed row
changes the sentence, and a question whose scenario is absent is not asked."""

from __future__ import annotations

import copy

from analysis.answers import answers
from analysis.palette import html_markup, rich_markup


def _row(scenario: str, algorithm: str, **fields) -> dict:
    row = {"scenario": scenario, "algorithm": algorithm, "store": "memory", "limit": 50.0, "window_s": 1.0,
           "rejected_rate": 0.0, **fields}
    return {**row, "run": f"{scenario}__{algorithm}__{row['store']}"}


ROWS = [
    _row("boundary_burst", "fixed_window", over_admission=2.0),
    _row("boundary_burst", "sliding_log", over_admission=1.0),
    _row("boundary_burst", "token_bucket", over_admission=1.3),
    _row("boundary_burst", "none", over_admission=2.0),
    _row("page_load_burst", "sliding_log", rejected_legit=69, legit_requests=106, rejected_legit_rate=69 / 106),
    _row("page_load_burst", "token_bucket", rejected_legit=0, legit_requests=106, rejected_legit_rate=0.0),
    _row("unhealthy_downstream", "fixed_window", latency_p99_intended_ms=1065.0),
    _row("unhealthy_downstream", "adaptive", latency_p99_intended_ms=503.8, rejected_rate=0.286),
    _row("unhealthy_downstream", "none", latency_p99_intended_ms=1057.8),
    _row("retry_storm-none", "token_bucket", scenario_params={"backoff": "none"}, amplification=6.0, calls=600,
         unique_requests=100, completed_requests=40, time_to_done_s=4.0),
    _row("retry_storm-full_jitter", "token_bucket", scenario_params={"backoff": "full_jitter"}, amplification=1.9, calls=190,
         unique_requests=100, completed_requests=100, time_to_done_s=3.2),
    _row("multi_node-rr", "token_bucket", store="redis-local", over_admission=2.95),
    _row("multi_node-rr", "token_bucket", store="redis-shared", over_admission=1.0),
    _row("multi_node-rr", "fixed_window", store="redis-shared", over_admission=1.9),
]


def _by_key(rows: list[dict]) -> dict[str, str]:
    return {a.key: a.sentence for a in answers(rows)}


def test_every_question_answered_from_the_rows() -> None:
    got = _by_key(ROWS)
    assert list(got) == ["over_admission", "legit_rejections", "bounded_p99", "retries", "distribution"]
    assert got["over_admission"] == (  # the worst of every scenario: the fleet's local counters, not the burst
        "On multi_node-rr (L 50 per 1 s), the worst of 6 rate-limiter runs: up to 2.95x the limit: token_bucket "
        "(redis-local) admitted 148 in one 1 s window against a limit of 50 (multi_node-rr__token_bucket__redis-local); "
        "on the same traffic token_bucket (redis-shared) held it to 1.00x (multi_node-rr__token_bucket__redis-shared); "
        "1 of 6 runs went past the 2x line (the fixed window's bound): multi_node-rr__token_bucket__redis-local.")
    boundary = _by_key([r for r in ROWS if r["scenario"] == "boundary_burst"])["over_admission"]
    assert boundary == (
        "On boundary_burst (L 50 per 1 s), the worst of 3 rate-limiter runs: up to 2.00x the limit: fixed_window admitted "
        "100 in one 1 s window against a limit of 50 (boundary_burst__fixed_window__memory); on the same traffic "
        "sliding_log held it to 1.00x (boundary_burst__sliding_log__memory); no run went past the 2x line "
        "(the fixed window's bound).")
    assert got["legit_rejections"] == (
        "With sliding_log, yes: 69 of 106 legitimate requests (65.1%) got a 429 (page_load_burst__sliding_log__memory); "
        "no legitimate request rejected by token_bucket (page_load_burst__token_bucket__memory).")
    assert got["bounded_p99"] == (
        "Best: adaptive, P99 504 ms while rejecting 28.6% of requests (unhealthy_downstream__adaptive__memory); "
        "fixed_window: 1,065 ms (unhealthy_downstream__fixed_window__memory); its limit was never reached (0% rejected); "
        "no limiting at all (none): 1,058 ms.")
    assert got["retries"] == (
        "With full_jitter backoff: 1.9 calls per request, 100 of 100 completed in 3.2 s "
        "(retry_storm-full_jitter__token_bucket__memory); with no backoff: 6.0 calls per request, 40 of 100 completed in 4.0 s "
        "(retry_storm-none__token_bucket__memory).")
    assert got["distribution"] == (
        "The most the fleet admitted to one key in any window, as a multiple of the limit: "
        "redis-shared 1.90x (multi_node-rr__fixed_window__redis-shared), redis-local 2.95x (multi_node-rr__token_bucket__redis-local).")


def test_a_changed_row_changes_the_sentence() -> None:
    rows = copy.deepcopy(ROWS)
    rows[2]["over_admission"] = 3.1  # token_bucket past the fleet's 2.95x: now the worst of the campaign
    got = _by_key(rows)["over_admission"]
    assert got.startswith("On boundary_burst (L 50 per 1 s), the worst of 6 rate-limiter runs: up to 3.10x the limit: "
                          "token_bucket admitted 155 in one 1 s window")
    assert got.endswith("; 2 of 6 runs went past the 2x line (the fixed window's bound): "
                        "boundary_burst__token_bucket__memory and multi_node-rr__token_bucket__redis-local.")
    rows[5]["rejected_legit"], rows[5]["rejected_legit_rate"] = 10, 10 / 106
    assert _by_key(rows)["legit_rejections"].endswith(
        "; every limiter rejected some; the fewest: token_bucket (9.4%, page_load_burst__token_bucket__memory).")
    rows[6]["latency_p99_intended_ms"] = 400.0
    assert _by_key(rows)["bounded_p99"].startswith("Best: fixed_window, P99 400 ms while rejecting 0.0% of requests "
                                                   "(unhealthy_downstream__fixed_window__memory), its limit never reached")


def test_the_headline_is_the_worst_of_every_scenario_and_names_its_run() -> None:
    """Issue 23's campaign: url peers held the clock-edge burst to 1.00x, an edge aimed at each
    key's first request got 1.95x through; the headline is the hunt's, and a run past the 2x line
    is counted even where no fixed-window algorithm of the suite's ran (a peer's name is no family)."""
    rows = [_row("boundary_burst", "gw-a", system="url", over_admission=1.0),
            _row("boundary_burst", "gw-b", system="url", over_admission=1.0),
            _row("adversarial_drip", "gw-a", system="url", over_admission=1.3),
            _row("first_hit_hunt", "gw-a", system="url", over_admission=1.96),
            _row("first_hit_hunt", "gw-b", system="url", over_admission=1.9),
            _row("steady", "concurrency", over_admission=None, in_flight_ratio=1.0)]
    got = answers(rows)[0]
    assert got.sentence == (
        "On first_hit_hunt (L 50 per 1 s), the worst of 5 rate-limiter runs: up to 1.96x the limit: gw-a and gw-b "
        "(within noise of each other) admitted 98 in one 1 s window against a limit of 50 (first_hit_hunt__gw-a__memory); "
        "every limiter on that traffic within noise of it.")
    assert got.runs[0] == "first_hit_hunt__gw-a__memory"
    rows[4]["over_admission"] = 2.1
    got = answers(rows)[0].sentence
    assert got.startswith("On first_hit_hunt (L 50 per 1 s), the worst of 5 rate-limiter runs: up to 2.10x the limit: gw-b")
    assert got.endswith("; 1 of 5 runs went past the 2x line (the fixed window's bound): first_hit_hunt__gw-b__memory.")
    assert "no run went past" not in got


def test_only_the_questions_the_campaign_can_answer() -> None:
    boundary_only = [r for r in ROWS if r["scenario"] == "boundary_burst"]
    assert [a.key for a in answers(boundary_only)] == ["over_admission"]
    simulated = [{**r, "latency_p99_intended_ms": None} for r in ROWS if r["scenario"] == "unhealthy_downstream"]
    assert answers(simulated) == []  # no client log: no P99 to answer with
    assert answers([r for r in ROWS if r["algorithm"] == "none"]) == []  # the baseline alone answers nothing


def test_algorithm_names_take_their_chart_colour() -> None:
    assert rich_markup("fixed_window beat sliding_window_counter [x]") == \
        "[bold #1f77b4]fixed_window[/] beat [bold #2ca02c]sliding_window_counter[/] \\[x]"
    assert html_markup("run boundary_burst__fixed_window__memory & gcra") == \
        "run boundary_burst__fixed_window__memory &amp; <span class='alg' style='color:#e377c2'>gcra</span>"


def _cpu(algorithm: str, us: float | None, low: float | None = None, high: float | None = None, **fields) -> dict:
    spread = {} if us is None else {"cpu_target_us_per_req": [low, high]}
    return _row("steady", algorithm, cpu_target_ms_per_1k=150.0, cpu_target_us_per_req=us, spread=spread,
                cpu_target_resolution_ms_per_1k=5.9, **fields)


def test_the_cpu_answer_gives_each_algorithm_its_interval_or_its_resolution() -> None:
    rows = [_cpu("fixed_window", 100.0, 90.0, 110.0), {**_cpu("fixed_window", 120.0, 115.0, 125.0), "scenario": "ramp"},
            _cpu("token_bucket", None)]
    assert _by_key(rows)["cpu"] == (  # the median of 100 and 120, the span of the two intervals
        "Per request, with its 95% interval: fixed_window 110.0 µs (90.0-125.0); token_bucket: below the resolution "
        "of this run (5.9 ms per 1,000 requests): use `bench targets`.")
    assert _by_key([_cpu("token_bucket", None), _cpu("gcra", None)])["cpu"] == (
        "The marginal CPU per request is below the resolution of this run (5.9 ms per 1,000 requests): use `bench targets`.")
    assert _by_key([_cpu("gcra", 106.5, 106.5, 106.5, kind="virtual")])["cpu"] == (
        "Per request, with its 95% interval: gcra 106.5 µs (exact). Virtual time: the system model's cost (its cpu_us), "
        "not a measurement.")
    assert "cpu" not in _by_key(ROWS)  # no CPU samples: not asked
