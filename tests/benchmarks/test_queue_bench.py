"""``run_bench.py bench queue``: the simulated downstream's M/M/c wait against Erlang C."""

from __future__ import annotations

import pytest

from benchmarks.queue import erlang_c_wait, main, row


def test_erlang_c_by_hand():
    # M/M/1: Wq = rho / (mu - lam); two slots at a = 1: P(wait) = 1/3, Wq = (1/3) / (2 - 1)
    assert erlang_c_wait(1, 0.5, 1.0) == pytest.approx(1.0)
    assert erlang_c_wait(2, 1.0, 1.0) == pytest.approx(1 / 3)


def test_a_row_says_theory_spread_mean_and_goal():
    utilisation, theory_ms, spread, std, mean, goal = row(0.5, 20_000, 2)
    assert (utilisation, theory_ms) == ("0.5", "0.148") and ".." in spread and std.endswith("%")
    assert "(+-" in mean and goal in {"met", "MISSED"}


def test_bad_arguments_exit_2(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--seeds", "0"])
    assert exited.value.code == 2 and "--seeds" in capsys.readouterr().err
