"""run.json as the live runner builds it (``RunRecord``): the planned fields always, every other
field once a step gave it (null included), in one order; what it writes is what the reader reads."""

from __future__ import annotations

import json

import pytest

from contract.run_info import RunRecord, read_run_json


def planned() -> RunRecord:
    return RunRecord(status="failed", scenario="boundary_burst", algorithm="fixed_window", store="memory", system="suite",
                     policy={"limit": 20.0, "window_s": 1.0, "burst": None}, params={"limit": 20.0}, scenario_params={},
                     workers=1, processes=1, limiters="shared", seed=3, repeat=None, gateway=None)


def test_a_run_that_failed_early_says_only_what_it_got_to():
    record = planned().add(start_at=10.0, error="target did not start", generator_bound=None)
    assert list(record.to_json()) == ["status", "scenario", "algorithm", "store", "system", "policy", "params",
                                      "scenario_params", "workers", "processes", "limiters", "seed", "repeat", "gateway",
                                      "start_at", "error", "generator_bound"]
    assert record.to_json()["generator_bound"] is None  # given as null: written as null
    assert record.get("end_at") is None and "end_at" not in record.to_json()


def test_fields_are_written_in_one_order_whatever_order_the_steps_give_them():
    early = planned().add(virtual_over_admission=None, sent=40, start_at=1.0, status="ok")
    late = planned().add(start_at=1.0, sent=40, status="ok", virtual_over_admission=None)
    assert list(early.to_json()) == list(late.to_json())
    assert list(late.to_json()).index("start_at") < list(late.to_json()).index("sent") \
        < list(late.to_json()).index("virtual_over_admission")
    assert late.to_json()["status"] == "ok"


def test_a_field_run_json_does_not_have_is_refused():
    with pytest.raises(TypeError, match=r"run\.json has no field 'sent_at'"):
        planned().add(sent_at=1.0)


def test_what_it_writes_is_what_the_reader_reads(tmp_path):
    path = tmp_path / "run.json"
    planned().add(status="ok", phases=[{"name": "degraded", "start_t": 1.0, "end_t": 2.0}], redis_restarted="why").write(path)
    raw = json.loads(path.read_text())
    assert raw["schema"] == 1 and raw["redis_restarted"] == "why" and list(raw)[:2] == ["schema", "status"]
    info = read_run_json(path)
    assert (info.status, info.scenario, info.policy.burst, info.degraded.end_t) == ("ok", "boundary_burst", 20.0, 2.0)
