"""A live run replays its plan exactly or fails saying how (harness/live/logs.py: ``plan_not_kept``)."""

from __future__ import annotations

from harness.live.logs import plan_not_kept


def test_a_plan_not_replayed_exactly_says_how(tmp_path):
    log = tmp_path / "locust.log"
    log.write_text("[2026] vm/INFO/locust.runners: Worker vm_1 failed to send heartbeat, setting state to missing.\n")
    record = {"planned_requests": 300_000, "planned_sent": 3_964, "sent_twice": 0}
    assert plan_not_kept(record, log) == ("the Locust master lost workers 1 time(s) (heartbeats missed: locust.log); "
                                          "3,964 of 300,000 planned requests were sent")
    assert plan_not_kept({**record, "planned_sent": 300_000, "sent_twice": 12}, tmp_path / "none.log") == "12 were sent twice"
    assert plan_not_kept({**record, "planned_sent": 300_000}, tmp_path / "none.log") is None
