"""How a worker's share becomes releases: groups by the 2 ms gap, deadlines, and which groups
are bursts (kept by polling), on hand-made shots."""

from __future__ import annotations

from scenarios.live_plan import BURST, Shot, releases


def _shots(ts: list[float]) -> list[Shot]:
    return [Shot(i, t, "GET", "/api/items", {}) for i, t in enumerate(ts)]


def test_groups_leave_at_their_first_shots_time():
    got = releases(_shots([0.0, 0.001, 0.002, 0.0021, 0.5]), start_at=100.0, gap_s=0.002)
    assert [(r.deadline, r.requests, r.burst) for r in got] == [
        (100.0, range(0, 3), False), (100.0021, range(3, 4), False), (100.5, range(4, 5), False)]


def test_a_burst_is_many_requests_planned_at_one_instant():
    at_once = releases(_shots([1.0] * BURST), 0.0, 0.002)
    assert [(r.requests, r.burst) for r in at_once] == [(range(0, BURST), True)]
    one_short = releases(_shots([1.0] * (BURST - 1)), 0.0, 0.002)
    assert [r.burst for r in one_short] == [False]


def test_a_group_joined_from_distinct_times_is_not_a_burst():
    # steady traffic at 6,000/s: a dozen requests within 2 ms, none at the same instant
    dense = releases(_shots([i / 6000 for i in range(12)]), 0.0, 0.002)
    assert [(len(r.requests), r.burst) for r in dense] == [(12, False)]
    # the first BURST at one instant make a burst, whatever joins them within the gap
    mixed = releases(_shots([0.0] * BURST + [0.001]), 0.0, 0.002)
    assert [(len(r.requests), r.burst) for r in mixed] == [(BURST + 1, True)]
