"""A ramp binned by offered rate, on hand-made logs whose answer is known exactly: change one
request (slow, late, failed) and the highest sustained rate moves to the bin before it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from analysis.answers import _sustained as _said
from analysis.answers import answers
from analysis.ramp import P99_BOUND_MS, bins, measures, sustained
from analysis.report import build_report
from contract.schema import CHARTS_DIR, REPORT_MD, SUMMARY_CSV, SUMMARY_JSON

from .synth import RAMP_PHASE, RAMP_RATES, T0, ramp_logs, write_run


def _sustained(bound_ms: float = P99_BOUND_MS, **changes) -> tuple[float, str | None]:
    client = ramp_logs("token_bucket", **changes)[1].to_pandas()
    return sustained(bins(client, T0, T0 + len(RAMP_RATES), 1.0), bound_ms)


def test_bins_count_the_offered_rate_and_the_admitted_p99() -> None:
    client = ramp_logs("token_bucket", slow={3: 250.0})[1].to_pandas()
    b = bins(client, T0, T0 + 5, 1.0)
    assert b["offered_rps"].tolist() == [10, 20, 30, 40, 50]
    assert b["admitted"].tolist() == [8, 16, 24, 32, 40]  # two 429s in every ten
    assert b["p99_ms"].round(3).tolist() == [10.0, 10.0, 10.0, 250.0, 10.0]  # nearest rank: the largest of <= 100
    assert b["late"].sum() == 0 and b["failed"].sum() == 0
    assert bins(client, T0, T0 + 2.75, 0.5)["offered_rps"].tolist() == [10, 10, 20, 20, 30]  # whole bins only


@pytest.mark.parametrize(("changes", "expected"), [
    ({}, (50.0, None)),
    ({"slow": {3: 300.0}}, (30.0, "p99")),
    ({"slow": {3: 90.0}}, (50.0, None)),
    ({"slow": {1: 300.0}}, (10.0, "p99")),  # bins 2-4 are fine again, but a queue built at 20/s is not sustained
    ({"late": (2,)}, (20.0, "late")),
    ({"status": {1: 500}}, (10.0, "failed")),
    ({"status": {2: 0}}, (20.0, "failed")),  # no answer
    ({"status": {0: 503}}, (0.0, "failed")),
    ({"status": {4: 429}}, (50.0, None)),  # a rejection is a decision, not a failure
])
def test_the_first_bad_bin_ends_the_sustained_rate(changes: dict, expected: tuple) -> None:
    assert _sustained(**changes) == expected


def test_the_bound_is_the_runs_and_a_rejected_request_never_counts_in_p99() -> None:
    assert _sustained(50.0, slow={3: 90.0}) == (30.0, "p99")
    client = ramp_logs("token_bucket")[1].to_pandas()
    rejected = np.flatnonzero(client["status"].to_numpy() == 429)[0]
    client.loc[rejected, "done_t"] += 5.0
    assert sustained(bins(client, T0, T0 + 5, 1.0), P99_BOUND_MS) == (50.0, None)


def test_a_bin_is_late_from_one_percent_of_its_sends() -> None:
    def whole(**changes) -> tuple[float, str | None]:  # the ramp as one bin of 150 requests
        return sustained(bins(ramp_logs("token_bucket", **changes)[1].to_pandas(), T0, T0 + 5, 5.0), P99_BOUND_MS)

    assert whole(late=(0,)) == (30.0, None)  # 1 of 150
    assert whole(late=(0, 1)) == (0.0, "late")  # 2 of 150


def _folder(root: Path, runs: dict[str, dict], extra: dict | None = None) -> Path:
    for algorithm, changes in runs.items():
        write_run(root, "ramp", algorithm, *ramp_logs(algorithm, **changes), {**RAMP_PHASE, **(extra or {})})
    return root


RUNS = {"fixed_window": {"slow": {2: 400.0}}, "token_bucket": {}, "adaptive": {"late": (4,)}, "none": {"slow": {1: 900.0}}}


@pytest.mark.slow
def test_report_gives_the_column_the_sentence_and_the_chart(tmp_path: Path) -> None:
    root = _folder(tmp_path / "results", RUNS)
    report = build_report(root)
    rows = {r["algorithm"]: r for r in json.loads((root / SUMMARY_JSON).read_text())["runs"]}
    assert {a: (r["ramp_sustained_rps"], r["ramp_stopped_by"]) for a, r in rows.items()} == {
        "fixed_window": (20.0, "p99"), "token_bucket": (50.0, None), "adaptive": (40.0, "late"), "none": (10.0, "p99")}
    assert rows["token_bucket"]["ramp_p99_bound_ms"] == 100.0 and rows["token_bucket"]["ramp_offered_max_rps"] == 50.0
    assert "ramp_sustained_rps" in (root / SUMMARY_CSV).read_text().splitlines()[0].split(",")
    found = {a.key: a for a in report.answers()}
    assert found["throughput"].question == ("Offered up to 50/s: how high can the rate go with P99 under 100 ms "
                                            "and nothing late or failed?")
    assert found["throughput"].sentence == (
        "Best: token_bucket, 50/s (held to the top of the ramp; ramp__token_bucket__memory); "
        "worst: fixed_window, 20/s (then P99 over 100 ms; ramp__fixed_window__memory); adaptive in between; "
        "no limiting at all (none): 10/s (then P99 over 100 ms; ramp__none__memory).")
    assert (root / CHARTS_DIR / "ramp_p99-ramp.png").is_file() and (root / CHARTS_DIR / "ramp_p99-ramp.svg").is_file()
    assert report.chart_for(found["throughput"]).name == "ramp_p99-ramp"
    md = (root / REPORT_MD).read_text()
    assert "charts/ramp_p99-ramp.png" in md and "| sustained (offered /s) | then |" in md


@pytest.mark.slow
def test_a_changed_row_changes_the_answer(tmp_path: Path) -> None:
    runs = {**RUNS, "token_bucket": {"late": (3,)}, "fixed_window": {}}
    report = build_report(_folder(tmp_path / "results", runs, {"scenario_params": {"p99_bound_ms": 500.0}}), charts=False)
    sentence = next(a.sentence for a in report.answers() if a.key == "throughput")
    assert sentence == (
        "Best: fixed_window, 50/s (held to the top of the ramp; ramp__fixed_window__memory); "
        "worst: token_bucket, 30/s (then late sends: the generator fell behind; ramp__token_bucket__memory); "
        "adaptive in between; no limiting at all (none): 10/s (then P99 over 500 ms; ramp__none__memory).")


def test_no_ramp_run_no_question() -> None:
    rows = [{"scenario": "steady", "algorithm": "token_bucket", "store": "memory", "run": "steady__token_bucket__memory",
             "ramp_sustained_rps": None}]
    assert [a.key for a in answers(rows)] == []


def _row(**changes) -> dict:
    client = ramp_logs("token_bucket", **changes)[1].to_pandas()
    info = type("Info", (), {"phases": [type("P", (), {"name": "ramp", "start_t": T0, "end_t": T0 + len(RAMP_RATES)})()],
                             "scenario_params": {}})()
    return measures(info, client)[0]


@pytest.mark.parametrize(("changes", "expected"), [
    ({}, (50.0, None, None)),
    ({"late": (0,)}, (50.0, None, 1.0)),  # the first second late, the next good: a start-up stall, set aside
    ({"late": (0, 1)}, (50.0, None, 2.0)),
    ({"late": (0, 1, 2)}, (0.0, "late", None)),  # three seconds late: a ceiling at the lowest rate, not a start
    ({"late": (0,), "slow": {0: 300.0}}, (50.0, None, 1.0)),  # late, so its P99 is the stall's too
    ({"slow": {0: 300.0}}, (0.0, "p99", None)),  # slow without late sends: the side, never a start-up stall
    ({"late": (0,), "slow": {3: 300.0}}, (30.0, "p99", 1.0)),
    ({"late": (1,)}, (10.0, "late", None)),  # after a good bin: a ceiling as before
])
def test_a_late_start_is_a_stall_not_a_ceiling(changes: dict, expected: tuple) -> None:
    row = _row(**changes)
    assert (row["ramp_sustained_rps"], row["ramp_stopped_by"], row["ramp_startup_stall_s"]) == expected


def test_the_answer_says_the_stall() -> None:
    row = {**_row(late=(0,)), "run": "ramp__token_bucket__memory"}
    assert _said(row, "100 ms") == ("50/s (after a start-up stall of 1 s (late sends), held to the top of the ramp; "
                                    "ramp__token_bucket__memory)")
