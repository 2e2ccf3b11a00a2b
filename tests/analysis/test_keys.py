"""Who got the 429s: the per-key table against a brute-force count, and by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.keys import KEY_COLUMNS, per_key, timeline


def log(rows: list[tuple[float, str, bool, float]]) -> pd.DataFrame:
    t, key, allowed, cost = zip(*rows) if rows else ((), (), (), ())
    return pd.DataFrame({"t": np.asarray(t, dtype=float), "key": list(key), "allowed": np.asarray(allowed, dtype=bool),
                         "cost": np.asarray(cost, dtype=float)})


def test_by_hand():
    df = log([(0.0, "a", True, 1), (0.5, "a", True, 1), (0.9, "a", False, 1), (1.0, "a", True, 2),
              (0.2, "b", False, 1), (0.3, "b", False, 1), (5.0, "c", True, 1)])
    table = per_key(df, window_s=1.0)
    assert list(table.columns) == list(KEY_COLUMNS)
    assert table.to_dict("records") == [
        {"key": "b", "requests": 2, "refused": 2, "worst_window": 0.0},
        {"key": "a", "requests": 4, "refused": 1, "worst_window": 3.0},  # [0.5, 1.5): 1 + 2; [0, 1) holds 2
        {"key": "c", "requests": 1, "refused": 0, "worst_window": 1.0}]
    line = timeline(df, "a", origin=0.0)
    assert line["admitted_so_far"].tolist() == [1, 2, 2, 3] and line["refused_so_far"].tolist() == [0, 0, 1, 1]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 400), st.sampled_from("abcd"), st.booleans(), st.integers(1, 3)), max_size=60),
       st.integers(1, 200))
def test_worst_window_is_the_most_admitted_in_any_window_of_the_key(rows, ticks):
    # dyadic times (1/128 s): the brute force's s + W is exact, so an arrival at a window's end is
    # outside it as the sweep says (0.79 + 0.64 in hundredths is 1.4300000000000002 > 1.43)
    df = log([(t / 128.0, k, a, c) for t, k, a, c in rows])
    window = ticks / 128.0
    table = per_key(df, window).set_index("key")
    for key in {k for _, k, _, _ in rows}:
        mine = df[(df["key"] == key) & df["allowed"]]
        brute = max((mine.loc[(mine["t"] >= s) & (mine["t"] < s + window), "cost"].sum() for s in mine["t"]), default=0.0)
        assert table.at[key, "worst_window"] == brute
        assert table.at[key, "refused"] == int(((df["key"] == key) & ~df["allowed"]).sum())
    assert table["refused"].is_monotonic_decreasing
