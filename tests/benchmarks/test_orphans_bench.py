"""``run_bench.py bench orphans``: the moments spread over the run, the table's verdict against
the 2 s goal, its arguments bounded (the kills themselves: tests/harness/live/test_orphans.py)."""

from __future__ import annotations

import pytest

from benchmarks.orphans import SPAN_S, WATCH_S, main, moments, table
from harness.processes.leftovers import Killed


def test_one_moment_in_each_share_of_the_span_the_same_for_the_same_seed() -> None:
    drawn = moments(20, 41)
    width = (SPAN_S[1] - SPAN_S[0]) / 20  # 0.675 s
    assert len(drawn) == 20 and drawn == moments(20, 41) != moments(20, 42)
    assert all(SPAN_S[0] + i * width <= m <= SPAN_S[0] + (i + 1) * width for i, m in enumerate(drawn))


def test_the_slowest_kill_is_held_to_the_goal_and_what_was_left_is_named() -> None:
    met = table([Killed(1.0, 9, 4, 0.41, []), Killed(7.5, 12, 5, 1.93, [])])
    assert met.caption == "slowest: 1.93 s (goal 2 s, every time): met"
    assert list(met.columns[3].cells) == ["0.41 s", "1.93 s"] and list(met.columns[4].cells) == ["-", "-"]
    late = table([Killed(1.0, 9, 4, 2.2, [])])
    assert late.caption == "slowest: 2.20 s (goal 2 s, every time): NOT met"
    left = table([Killed(1.0, 9, 4, 0.3, []), Killed(3.0, 9, 4, None, ["412 nginx", "port 6380"])])
    assert left.caption == f"slowest: something left after {WATCH_S} s (goal 2 s, every time): NOT met"
    assert list(left.columns[4].cells) == ["-", "412 nginx; port 6380"]


@pytest.mark.parametrize("args", [["--moments", "0"], ["--moments", "2000"], ["--seed", "x"]])
def test_bad_arguments_are_one_line_exit_2(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(args)
    assert exited.value.code == 2 and capsys.readouterr().err.count("\n") == 1
