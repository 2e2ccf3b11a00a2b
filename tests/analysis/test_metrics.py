"""Metrics on hand-built decision logs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.metrics import accuracy, admitted_envelope, basis, class_split, over_admission, peak_in_flight, summarize
from contract.run_info import RunPolicy


def log(rows):
    df = pd.DataFrame(rows, columns=["t", "key", "cost", "allowed", "ideal_allowed", "client_class"])
    df["delay_s"] = 0.0
    return df


def test_over_admission_is_the_worst_window_of_the_worst_key():
    df = log([
        # key a: 100 at 59.9 and 100 at 60.1 (the fixed-window edge), L = 100 per 60 s
        (59.9, "a", 100, True, True, "abusive"),
        (60.1, "a", 100, True, False, "abusive"),
        (120.0, "a", 100, True, True, "abusive"),  # [60.1, 120.1) holds 200 as well
        (0.0, "b", 50, True, True, "legit"),
        (10.0, "b", 60, False, False, "legit"),  # rejected: does not count
        (59.99, "b", 50, True, True, "legit"),
        (60.0, "b", 1, True, True, "legit"),  # [0, 60) for b holds 100; t=60 starts a new one
    ])
    assert over_admission(df, 100, 60) == 2.0
    assert over_admission(df[df.key == "b"], 100, 60) == 1.0  # [0, 60) = 100; [59.99, 119.99) = 51
    assert accuracy(df) == {"false_admits": 1, "false_rejects": 0}
    split = class_split(df)
    assert (split["legit_requests"], split["rejected_legit"], split["abusive_requests"]) == (4, 1, 3)


def test_delay_moves_admission_time():
    df = log([(0.0, "a", 1, True, True, "legit"), (0.0, "a", 1, True, True, "legit")])
    df.loc[1, "delay_s"] = 2.0
    assert over_admission(df, 1, 1.0) == 1.0
    assert over_admission(df, 1, 3.0) == 2.0


def test_envelope_is_monotone_and_hits_total():
    df = log([(i * 0.1, "a", 1, True, True, "legit") for i in range(10)])
    env = admitted_envelope(df, [0.05, 0.1, 0.25, 1.0, 2.0])
    assert env["max_admitted_cost"].tolist() == [1, 1, 3, 10, 10]


def test_summary_row():
    df = log([(0.0, "a", 1, True, True, "legit"), (0.5, "a", 1, False, False, "abusive")])
    row = summarize(df, "fixed_window", RunPolicy(1, 1.0, 1), {})
    assert row["requests"] == 2 and row["rejected"] == 1 and row["over_admission"] == pytest.approx(1.0)


def test_peak_in_flight_half_open_intervals():
    # [0, 1) and [1, 2) never overlap; [0.5, 1.5) overlaps both: peak 2 (cost 1 each), then 3 with cost 2
    start, end = np.array([0.0, 1.0, 0.5]), np.array([1.0, 2.0, 1.5])
    assert peak_in_flight(start, end, np.ones(3)) == 2.0
    assert peak_in_flight(start, end, np.array([1.0, 1.0, 2.0])) == 3.0
    assert peak_in_flight(start, end, np.ones(3), np.array([0, 0, 1])) == 1.0  # per key: never two of one key at once


def test_concurrency_limiters_are_measured_in_flight_not_per_key():
    # one global key "*": 6 admitted at once would read 6x L=1 as over-admission; in flight it is 6 of bound 8
    df = log([(0.01 * i, "*", 1, True, True, "legit") for i in range(6)])
    policy = RunPolicy(1, 1.0, 8)
    for algorithm in ("concurrency", "adaptive"):
        row = basis(df, algorithm, policy, {"hold_s": 1.0})
        assert row["over_admission"] is None
        assert row["in_flight_peak"] == 6.0 and row["in_flight_bound"] == 8.0 and row["in_flight_ratio"] == 0.75
    # completion times from the client log end them sooner: two at a time
    done = np.array([0.015, 0.025, 0.035, 0.045, 0.055, 0.065])
    assert basis(df, "concurrency", policy, {}, done)["in_flight_peak"] == 2.0
    rate = basis(df, "fixed_window", policy, {})
    assert rate["over_admission"] == 6.0 and rate["in_flight_ratio"] is None
