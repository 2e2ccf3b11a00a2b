"""Metrics on hand-built decision logs."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis.metrics import accuracy, admitted_envelope, class_split, over_admission, summarize


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
    row = summarize(df, 1, 1.0)
    assert row["requests"] == 2 and row["rejected"] == 1 and row["over_admission"] == pytest.approx(1.0)
