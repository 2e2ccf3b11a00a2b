"""The live view's figures: Locust's running stats read from the tail of its history file, and
the plan's offered rate, on hand-made inputs."""

from __future__ import annotations

import numpy as np

from harness.live.load_view import load_figures, locust_now, offered_rps

HEADER = ("Timestamp,User Count,Type,Name,Requests/s,Failures/s,50%,66%,75%,80%,90%,95%,98%,99%,99.9%,99.99%,100%,"
          "Total Request Count,Total Failure Count,Total Median Response Time,Total Average Response Time,"
          "Total Min Response Time,Total Max Response Time,Total Average Content Size")


def row(t: int, name: str, rps: str, p50: str, p99: str, total: int, failed: int) -> str:
    return f"{t},3,{'GET' if name != 'Aggregated' else ''},{name},{rps},0.0,{p50},1,1,1,1,1,1,{p99},1,1,1,{total},{failed},1,1.0,1,1,1"


def test_the_last_aggregated_row_is_the_generators_now(tmp_path):
    history = tmp_path / "stats_stats_history.csv"
    assert locust_now(history) is None  # not written yet
    history.write_text(HEADER + "\n" + row(1, "Aggregated", "0.0", "N/A", "N/A", 0, 0) + "\n")
    assert locust_now(history) == {"achieved_rps": 0.0, "requests": 0.0, "failures": 0.0, "p50_ms": None, "p99_ms": None}
    lines = [row(t, "Aggregated", f"{1000.0 * t}", "12", "48", 900 * t, t) for t in range(2, 400)]
    history.write_text(HEADER + "\n" + "\n".join([*lines, row(400, "GET /api/items", "5.0", "1", "2", 3, 0)]) + "\n")
    assert locust_now(history) == {"achieved_rps": 399_000.0, "requests": 359_100.0, "failures": 399.0,
                                   "p50_ms": 12.0, "p99_ms": 48.0}  # read from the tail, past the 8 KiB a long run has


def test_the_offered_rate_is_the_plans_last_second():
    t = np.array([0.1, 0.5, 0.9, 1.2, 1.4, 1.6, 1.8, 2.5])
    assert offered_rps(t, 1.0) == 3.0  # (0, 1]
    assert offered_rps(t, 2.0) == 4.0  # (1, 2]
    assert offered_rps(t, 10.0) == 0.0


def test_the_late_sends_come_with_locusts_figures(tmp_path):
    """The master's late-sends file (``stats_late_sends.txt``) beside the history: read with the
    history's figures, never alone (before Locust has figures there is no generator's side)."""
    history, t = tmp_path / "stats_stats_history.csv", np.array([0.5, 1.5])
    (tmp_path / "stats_late_sends.txt").write_text("4")
    assert load_figures(t, 100.0, 110.0, 102.0, history) == {"elapsed_s": 2.0, "remaining_s": 8.0, "offered_rps": 1.0}
    history.write_text(HEADER + "\n" + row(1, "Aggregated", "2.0", "3", "9", 2, 0) + "\n")
    assert load_figures(t, 100.0, 110.0, 102.0, history)["late_groups"] == 4.0
    (tmp_path / "stats_late_sends.txt").write_text("")  # unreadable: no figure rather than a wrong one
    assert "late_groups" not in load_figures(t, 100.0, 110.0, 102.0, history)
