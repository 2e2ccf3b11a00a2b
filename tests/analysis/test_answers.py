"""The answer sentences come from summary rows: exact sentences on hand-made rows, a changed row
changes the sentence, and a question whose scenario is absent is not asked."""

from __future__ import annotations

import copy

from analysis.answers import Answer, answers
from analysis.palette import html_markup, rich_markup
from analysis.spread import apart

from .consistency import contradictions


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
    assert got["over_admission"] == (  # the window edge first, each against its own bound; then the fleet's worst
        "At the window edge on boundary_burst (L 50 per 1 s), the most admitted in one 1 s window: fixed_window 2.00x "
        "(inside its 2.00x bound), sliding_log 1.00x (inside its 1.00x bound), token_bucket 1.30x (inside its 2.00x bound); "
        "the most of the campaign's 6 rate-limiter runs on multi_node-rr (L 50 per 1 s): token_bucket (redis-local) 2.95x "
        "(past its 2.00x bound by 0.95x), in multi_node-rr__token_bucket__redis-local; 1 of 6 runs went past their own bound: "
        "multi_node-rr__token_bucket__redis-local (by 0.95x).")
    boundary = _by_key([r for r in ROWS if r["scenario"] == "boundary_burst"])["over_admission"]
    assert boundary == (
        "At the window edge on boundary_burst (L 50 per 1 s), the most admitted in one 1 s window: fixed_window 2.00x "
        "(inside its 2.00x bound), sliding_log 1.00x (inside its 1.00x bound), token_bucket 1.30x (inside its 2.00x bound); "
        "every limiter stayed inside its own bound.")
    assert got["legit_rejections"] == (
        "With sliding_log, yes: 69 of 106 legitimate requests (65.1%) got a 429 (page_load_burst__sliding_log__memory); "
        "no legitimate request rejected by token_bucket (page_load_burst__token_bucket__memory); the burst of 50 spared "
        "69 of the 69 legitimate requests sliding_log refused (token_bucket, page_load_burst__token_bucket__memory).")
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
    rows[2]["over_admission"] = 3.1  # token_bucket past the fleet's 2.95x: now the worst of the campaign, at the edge
    got = _by_key(rows)["over_admission"]
    assert got == (
        "At the window edge on boundary_burst (L 50 per 1 s), the most admitted in one 1 s window: fixed_window 2.00x "
        "(inside its 2.00x bound), sliding_log 1.00x (inside its 1.00x bound), token_bucket 3.10x (past its 2.00x bound by "
        "1.10x); 2 of 6 runs went past their own bound: boundary_burst__token_bucket__memory (by 1.10x), "
        "multi_node-rr__token_bucket__redis-local (by 0.95x).")
    rows[5]["rejected_legit"], rows[5]["rejected_legit_rate"] = 10, 10 / 106
    assert _by_key(rows)["legit_rejections"].endswith(
        "; every limiter rejected some; the fewest: token_bucket (9.4%, page_load_burst__token_bucket__memory); the burst "
        "of 50 spared 59 of the 69 legitimate requests sliding_log refused (token_bucket, page_load_burst__token_bucket__memory).")
    rows[6]["latency_p99_intended_ms"] = 400.0
    assert _by_key(rows)["bounded_p99"].startswith("Best: fixed_window, P99 400 ms while rejecting 0.0% of requests "
                                                   "(unhealthy_downstream__fixed_window__memory), its limit never reached")


def test_the_headline_is_the_window_edge_then_the_worst_of_every_scenario() -> None:
    """Issue 23's campaign: url peers held the clock-edge burst to 1.00x, an edge aimed at each
    key's first request got 1.96x through: the window edge leads, the hunt's worst follows; a peer's
    algorithm is unknown, so its bound is the loosest of the suite's under its policy (2x here)."""
    rows = [_row("boundary_burst", "gw-a", system="url", over_admission=1.0),
            _row("boundary_burst", "gw-b", system="url", over_admission=1.0),
            _row("adversarial_drip", "gw-a", system="url", over_admission=1.3),
            _row("first_hit_hunt", "gw-a", system="url", over_admission=1.96),
            _row("first_hit_hunt", "gw-b", system="url", over_admission=1.9),
            _row("steady", "concurrency", over_admission=None, in_flight_ratio=1.0)]
    got = answers(rows)[0]
    assert got.sentence == (
        "At the window edge on boundary_burst (L 50 per 1 s), the most admitted in one 1 s window: gw-a and gw-b 1.00x "
        "(each inside its 2.00x bound); the most of the campaign's 5 rate-limiter runs on first_hit_hunt (L 50 per 1 s): "
        "gw-a 1.96x (inside its 2.00x bound), gw-b 1.90x (inside its 2.00x bound), in first_hit_hunt__gw-a__memory; every "
        "limiter stayed inside its own bound.")
    assert got.runs == ("boundary_burst__gw-a__memory", "boundary_burst__gw-b__memory", "first_hit_hunt__gw-a__memory")
    rows[4]["over_admission"] = 2.1
    got = answers(rows)[0].sentence
    assert got.endswith("gw-b 2.10x (past its 2.00x bound by 0.10x), in first_hit_hunt__gw-b__memory; 1 of 5 runs went past "
                        "their own bound: first_hit_hunt__gw-b__memory (by 0.10x).")
    without_edge = [r for r in rows if r["scenario"] != "boundary_burst"]
    assert answers(without_edge)[0].sentence.startswith(
        "On first_hit_hunt (L 50 per 1 s), the most admitted in one 1 s window: gw-a 1.96x (inside its 2.00x bound), "
        "gw-b 2.10x (past its 2.00x bound by 0.10x); 1 of 3 runs")


def test_a_burst_by_design_is_inside_its_bound() -> None:
    """The default campaign's page loads (L 2 per 1 s, burst 10): a bucket's bound is (B + L)/L = 6x,
    so 5.50x is inside it, never past the fixed window's 2x line; the burst's worth is the
    legitimate requests it spared."""
    page = {"limit": 2.0, "burst": 10.0, "legit_requests": 400}
    rows = [_row("page_load_burst", "fixed_window", over_admission=2.0, rejected_legit=150, rejected_legit_rate=0.375, **page),
            _row("page_load_burst", "sliding_log", over_admission=1.0, rejected_legit=200, rejected_legit_rate=0.5, **page),
            *(_row("page_load_burst", a, over_admission=5.5, rejected_legit=12, rejected_legit_rate=0.03,
                   params={"capacity": 10.0, "rate": 2.0} if a != "gcra" else {"interval_s": 0.5, "burst": 10.0}, **page)
              for a in ("token_bucket", "leaky_bucket", "gcra"))]
    got = _by_key(rows)
    assert got["over_admission"] == (
        "On page_load_burst (L 2 per 1 s, burst 10), the most admitted in one 1 s window: fixed_window 2.00x (inside its "
        "2.00x bound), sliding_log 1.00x (inside its 1.00x bound), token_bucket, leaky_bucket and gcra 5.50x (each inside "
        "its 6.00x bound); every limiter stayed inside its own bound.")
    assert got["legit_rejections"].endswith(
        "; the burst of 10 spared 188 of the 200 legitimate requests sliding_log refused "
        "(token_bucket, page_load_burst__token_bucket__memory).")


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


def _ramp(algorithm: str, sustained: float, p99: float, **fields) -> dict:
    return _row("ramp", algorithm, ramp_sustained_rps=sustained, ramp_stopped_by="p99", ramp_p99_bound_ms=100.0,
                ramp_offered_min_rps=100.0, ramp_offered_max_rps=2000.0, latency_p99_intended_ms=p99, kind="virtual",
                **fields)


def test_a_tie_at_the_top_is_said_and_broken_by_p99_then_goodput() -> None:
    """Issue 38: the ring, the token bucket and adaptive all sustained 1,000/s (virtual time: tied,
    not within noise); the token bucket's lower P99 puts it first; adaptive refused 79% of its
    traffic, said beside its rate."""
    rows = [_ramp("fixed_window", 500.0, 90.0), _ramp("sliding_window_ring", 1000.0, 40.0),
            _ramp("token_bucket", 1000.0, 12.0), _ramp("adaptive", 1000.0, 20.0, rejected_rate=0.79)]
    assert _by_key(rows)["throughput"] == (
        "Best: token_bucket, 1,000/s (then P99 over 100 ms; ramp__token_bucket__memory); tied with it on the rate: "
        "adaptive while refusing 79% of requests (ramp__adaptive__memory), sliding_window_ring "
        "(ramp__sliding_window_ring__memory); token_bucket first by its lower P99 (12 ms against 20 ms, 40 ms); "
        "worst: fixed_window, 500/s (then P99 over 100 ms; ramp__fixed_window__memory).")
    assert contradictions(answers(rows), rows) == []
    before = Answer("throughput", "", "Best: sliding_window_ring, 1,000/s; worst: fixed_window, 500/s; token_bucket "
                    "and adaptive in between.", ("ramp__sliding_window_ring__memory",), None)  # issue 38's sentence
    assert contradictions([before], rows) == ["ramp__token_bucket__memory tied at the top, not named as such",
                                              "ramp__adaptive__memory tied at the top, not named as such"]
    rows[2]["latency_p99_intended_ms"] = 40.0  # P99 tied with the ring's: goodput decides
    rows[1]["goodput_rps"], rows[2]["goodput_rps"], rows[3]["goodput_rps"] = 950.0, 990.0, 210.0
    got = _by_key(rows)["throughput"]
    assert got.startswith("Best: adaptive, 1,000/s while refusing 79% of requests (then P99 over 100 ms; "
                          "ramp__adaptive__memory); tied with it on the rate: token_bucket (ramp__token_bucket__memory), "
                          "sliding_window_ring (ramp__sliding_window_ring__memory); adaptive first by its lower P99 "
                          "(20 ms against 40 ms, 40 ms)")
    rows[3]["latency_p99_intended_ms"] = 40.0  # all three at 40 ms: the token bucket's goodput decides
    assert "; token_bucket first by its higher goodput (990/s against 950/s, 210/s); worst" in _by_key(rows)["throughput"]


def test_an_adaptive_limit_that_collapsed_is_a_finding_with_its_time_and_floor() -> None:
    rows = [_ramp("token_bucket", 1000.0, 12.0),
            _ramp("adaptive", 200.0, 20.0, rejected_rate=0.79, limit_collapsed_s=3.5, limit_floor=1.0)]
    assert _by_key(rows)["throughput"] == (
        "Best: token_bucket, 1,000/s (then P99 over 100 ms; ramp__token_bucket__memory); worst: adaptive, 200/s while "
        "refusing 79% of requests (then P99 over 100 ms; ramp__adaptive__memory); adaptive's limit collapsed to 1 at "
        "3.5 s and never recovered (ramp__adaptive__memory).")
    slow = [_row("unhealthy_downstream", "adaptive", latency_p99_intended_ms=504.0, rejected_rate=0.9,
                 limit_collapsed_s=2.25, limit_floor=4.0)]
    assert _by_key(slow)["bounded_p99"].endswith(
        "; adaptive's limit collapsed to 4 at 2.25 s and never recovered (unhealthy_downstream__adaptive__memory).")


def test_virtual_time_figures_are_tied_or_apart_never_within_noise() -> None:
    """The default campaign in virtual time: eight limiters never reached their limit, P99
    962.864-962.871 ms: 963 ms each as written, tied; a difference within 5% still ranks."""
    rows = [_row("unhealthy_downstream", a, latency_p99_intended_ms=ms, kind="virtual", rejected_rate=r)
            for a, ms, r in (("adaptive", 360.713, 0.268), ("fixed_window", 962.866, 0.0), ("sliding_log", 962.871, 0.0))]
    assert _by_key(rows)["bounded_p99"] == (
        "Best: adaptive, P99 361 ms while rejecting 26.8% of requests (unhealthy_downstream__adaptive__memory); "
        "the 2 others: 963 ms (tied); their limits were never reached (0% rejected).")
    assert not apart(rows[1], rows[2], "latency_p99_intended_ms")
    assert apart({"x": 1.14, "kind": "virtual"}, {"x": 1.13, "kind": "virtual"}, "x")  # live, 1% would be noise
    assert not apart({"x": 1.14}, {"x": 1.13}, "x")
