"""Metrics against hand-built logs whose answers are worked out in the comments."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis import metrics
from analysis.client import goodput, header_truthfulness
from analysis.cpu import cpu_ms_per_1k, generator_bound
from analysis.ideal import ideal_sliding_log
from analysis.latency import admitted_latency, latency_percentiles, nearest_rank, time_to_recover
from contract.run_info import Phase

# L = 4 per W = 1 s, one key, cost 1. Admitted: 0.1 0.2 0.3 0.4 | 1.0 1.05 1.1 1.2.
# Windows [s, s+1): from 0.1 -> {0.1..0.4, 1.0, 1.05} = 6; from 0.2 -> 6; from 0.3 -> 6; 0.4 -> 5.
# Over-admission 6 / 4 = 1.5.
# Ideal sliding log ((t-1, t] + cost <= 4): 0.1-0.4 admitted; 0.95, 1.0, 1.05 rejected (4 in the
# window); 1.1 admitted (0.1 left it); 1.2 admitted; 1.5 admitted.
T = [0.1, 0.2, 0.3, 0.4, 0.95, 1.0, 1.05, 1.1, 1.2, 1.5]
ALLOWED = [True, True, True, True, False, True, True, True, True, False]
IDEAL = [True, True, True, True, False, False, False, True, True, True]


def ten_rows() -> pd.DataFrame:
    return pd.DataFrame({"t": T, "key": ["k"] * 10, "cost": [1.0] * 10, "allowed": ALLOWED, "ideal_allowed": IDEAL,
                         "client_class": ["abusive"] * 10, "limit_name": ["per_ip"] * 10})


def test_over_admission_of_ten_rows() -> None:
    assert metrics.over_admission(ten_rows(), 4, 1.0) == pytest.approx(1.5)


def test_false_admits_and_rejects_of_ten_rows() -> None:
    # allowed but not ideal: 1.0 and 1.05; ideal but rejected: 1.5
    assert metrics.accuracy(ten_rows()) == {"false_admits": 2, "false_rejects": 1}


def test_ideal_replay_reproduces_the_hand_decisions() -> None:
    df = ten_rows()
    got = ideal_sliding_log(df["t"].to_numpy(), df["key"], df["cost"].to_numpy(), 4, 1.0)
    assert got.tolist() == IDEAL


def test_envelope_at_the_window_is_over_admission() -> None:
    env = metrics.admitted_envelope(ten_rows(), [0.01, 0.15, 1.0])
    # 10 ms: one request; 150 ms: 0.1+0.2 or 1.0+1.05+1.1 -> 3; 1 s: 6
    assert env["max_admitted_cost"].tolist() == [1.0, 3.0, 6.0]


def test_envelope_of_many_keys_matches_the_sweep_key_by_key(monkeypatch: pytest.MonkeyPatch) -> None:
    # Chunks of 64 rows: windows reach across chunks and keys; ties and weighted costs included.
    monkeypatch.setattr(metrics, "CHUNK_ROWS", 64)
    rng = np.random.default_rng(3)
    t = rng.uniform(0, 10, 3000)
    t[::7] = t[1::7][: len(t[::7])]  # equal times
    keys = rng.integers(0, 90, 3000).astype(str)
    cost = rng.integers(0, 4, 3000).astype(float)
    df = pd.DataFrame({"t": t, "key": keys, "cost": cost, "allowed": rng.random(3000) < 0.9})
    lengths = [0.013, 0.1, 0.5, 2.0, 20.0]
    admitted = df[df["allowed"]].sort_values("t", kind="stable")
    expected = [max(metrics.max_window_cost(g["t"].to_numpy(), g["cost"].to_numpy(), d) for _, g in admitted.groupby("key"))
                for d in lengths]
    assert metrics.admitted_envelope(df, lengths)["max_admitted_cost"].tolist() == expected
    assert metrics.over_admission(df, 2.0, 0.5) == expected[2] / 2.0
    monkeypatch.setattr(metrics, "MAX_COMPOSITE", 1)  # too long for one axis: swept key by key
    assert metrics.admitted_envelope(df, lengths)["max_admitted_cost"].tolist() == expected


@pytest.mark.parametrize(("q", "expected"), [(50, 5), (90, 9), (99, 10), (99.9, 10), (0, 1), (100, 10)])
def test_nearest_rank_of_one_to_ten(q: float, expected: float) -> None:
    values = np.array([7, 3, 10, 1, 5, 9, 2, 8, 6, 4], dtype=float)  # 1..10 shuffled
    assert nearest_rank(values, q) == expected


def test_nearest_rank_of_one_to_a_thousand() -> None:
    values = np.arange(1000, 0, -1, dtype=float)
    # k = ceil(P/100 * 1000): P50 -> 500th, P99 -> 990th, P99.9 -> 999th (not the max)
    assert [nearest_rank(values, q) for q in (50, 90, 99, 99.9)] == [500, 900, 990, 999]
    assert nearest_rank(np.empty(0), 99) is None


def test_latency_from_intended_and_sent_time() -> None:
    client = pd.DataFrame({"request_id": list("abcd"), "intended_t": [0.0, 1.0, 2.0, 3.0],
                           "sent_t": [0.0, 1.5, 2.0, 3.0], "done_t": [0.01, 1.52, 2.03, 3.5],
                           "status": [200, 200, 200, 429], "attempt": [1, 1, 1, 1]})
    row = latency_percentiles(admitted_latency(client))
    # admitted: 10, 520, 30 ms from intended; 10, 20, 30 ms from sent (the 429 is not counted)
    assert row["latency_p50_intended_ms"] == pytest.approx(30.0)
    assert row["latency_p99_intended_ms"] == pytest.approx(520.0)
    assert row["latency_p99_sent_ms"] == pytest.approx(30.0)
    assert row["latency_p50_sent_ms"] == pytest.approx(20.0)


@pytest.mark.parametrize(("x", "expected"), [([1, 1, 1, 1], 1.0), ([1, 0, 0, 0], 0.25), ([1, 2, 3], 36 / 42), ([], None)])
def test_jain_index(x: list[float], expected: float | None) -> None:
    got = metrics.jain_index(np.array(x, dtype=float))
    assert got == (None if expected is None else pytest.approx(expected))


def test_fairness_among_legit_clients() -> None:
    # a: 4 of 4 admitted (share 1), b: 2 of 4 (share 0.5); the abuser does not count.
    # Jain = 1.5^2 / (2 * (1 + 0.25)) = 0.9
    df = pd.DataFrame({"client_id": ["a"] * 4 + ["b"] * 4 + ["x"] * 2, "key": ["k"] * 10, "cost": [1.0] * 10,
                       "allowed": [True] * 4 + [True, True, False, False] + [False, False],
                       "client_class": ["legit"] * 8 + ["abusive"] * 2})
    assert metrics.legit_fairness(df) == pytest.approx(0.9)
    assert metrics.rejections_by_limit(ten_rows()) == {"per_ip": 2}


def test_header_truthfulness() -> None:
    # r1: 429 with Retry-After 1.0, retried 1.0 s later -> admitted (honoured, admitted)
    # r2: 429 with Retry-After 1.0, retried after 0.5 s -> not made at Retry-After (ignored)
    # r3: 429 with Retry-After 2.0, retried after 2.1 s -> 429 again (honoured, rejected)
    client = pd.DataFrame({
        "request_id": ["r1", "r1", "r2", "r2", "r3", "r3"], "attempt": [1, 2, 1, 2, 1, 2],
        "intended_t": [0.0, 1.0, 0.0, 0.5, 0.0, 2.1], "sent_t": [0.0, 1.0, 0.0, 0.5, 0.0, 2.1],
        "done_t": [0.0, 1.01, 0.0, 0.51, 0.0, 2.11], "status": [429, 200, 429, 200, 429, 429]})
    rejected = pd.DataFrame({"t": [0.0, 0.0, 0.0, 2.1], "request_id": ["r1", "r2", "r3", "r3"],
                             "retry_after_s": [1.0, 1.0, 2.0, 1.0]})
    assert header_truthfulness(client, rejected) == (0.5, 2)


def test_header_truthfulness_reads_the_answer_where_the_limiters_log_does_not_say() -> None:
    """A peer's decisions keep no Retry-After: the client log's answer says it, read as the header
    truth reads it. r1 said 1 and was retried 1 s later, admitted; r2 said 1, retried after 0.5 s
    (not at Retry-After); r3 said "1.5", which breaks the letter and tells no wait: not counted."""
    client = pd.DataFrame({
        "request_id": ["r1", "r1", "r2", "r2", "r3", "r3"], "attempt": [1, 2, 1, 2, 1, 2],
        "intended_t": [0.0, 1.0, 0.0, 0.5, 0.0, 2.1], "sent_t": [0.0, 1.0, 0.0, 0.5, 0.0, 2.1],
        "done_t": [0.0, 1.01, 0.0, 0.51, 0.0, 2.11], "status": [429, 200, 429, 200, 429, 429],
        "limit_fields": ["retry-after: 1", None, "retry-after: 1", None, "retry-after: 1.5", None]})
    rejected = pd.DataFrame({"t": [0.0, 0.0, 0.0, 2.1], "request_id": ["r1", "r2", "r3", "r3"],
                             "retry_after_s": [np.nan] * 4})
    assert header_truthfulness(client, rejected) == (1.0, 1)


def test_goodput_counts_successes_per_second() -> None:
    client = pd.DataFrame({"intended_t": np.arange(10) * 0.5, "done_t": np.arange(10) * 0.5 + 0.5,
                           "status": [200] * 8 + [429, 503]})
    assert goodput(client) == pytest.approx(8 / 5.0)


def test_cpu_per_thousand_requests_and_generator_bound() -> None:
    # target: samples at 0 (first, ignored), 1 s at 50%, 2 s at 100% -> 1.5 CPU s; 1,000 requests -> 1,500 ms/1k
    cpu = pd.DataFrame({"t": [0, 1, 2, 0, 1, 2], "process": ["target:n0"] * 3 + ["locust:w0"] * 3,
                        "role": ["target"] * 3 + ["generator"] * 3, "cpu_percent": [0, 50, 100, 0, 95, 97],
                        "rss_bytes": [1] * 6})
    assert cpu_ms_per_1k(cpu, 1000) == {"cpu_target_ms_per_1k": 1500.0, "cpu_generator_ms_per_1k": 1920.0}
    assert generator_bound(cpu) is True
    calm = cpu.assign(cpu_percent=[0, 50, 100, 0, 40, 60])  # the generator averaged 50% of a core
    assert generator_bound(calm) is False
    assert generator_bound(calm, late_share=0.05) is False and generator_bound(calm, late_share=0.06) is True
    assert generator_bound(cpu.iloc[:3]) is None and generator_bound(cpu.iloc[:3], late_share=0.5) is True


def test_time_to_recover() -> None:
    # P99 10 ms before, 100 ms while degraded (10-20 s), 30 ms until 23 s, then 12 ms: recovered at 23 s -> 3 s
    t = np.arange(30.0)
    p99 = np.where(t < 10, 10.0, np.where(t < 20, 100.0, np.where(t < 23, 30.0, 12.0)))
    series = pd.DataFrame({"t": t, "p50": p99, "p99": p99})
    assert time_to_recover(series, Phase("degraded", 10.0, 20.0), 0.0) == 3.0
    never = series.assign(p99=np.where(t < 10, 10.0, 100.0))
    assert time_to_recover(never, Phase("degraded", 10.0, 20.0), 0.0) is None
