"""Each repeat of a virtual run keeps its own simulator figures (``wall_s``, ``evicted_keys``) in
summary.json: recorded in its run.json, never borrowed from another repeat's summary row."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from contract.schema import RUN_FILE, SUMMARY_JSON
from harness.cli.main import main

FIGURES = ("wall_s", "evicted_keys", "target_cores", "downstream_utilisation")


def _rows(out: Path) -> dict[str, dict]:
    return {r["run"]: r for r in json.loads((out / SUMMARY_JSON).read_text())["runs"]}


def test_three_repeats_keep_their_own_wall_s_and_evicted_keys_through_the_report(tmp_path: Path) -> None:
    campaign = tmp_path / "c.yaml"
    campaign.write_text(yaml.safe_dump({"name": "rep", "repeats": 3, "policy": {"limit": 10, "window_s": 1},
                                        "algorithms": ["fixed_window"], "scenarios": ["boundary_burst"]}))
    out = tmp_path / "out"
    assert main(["simulate", "--campaign", str(campaign), "--out", str(out), "--no-charts"]) == 0
    simulated = _rows(out)
    assert len(simulated) == 3
    for name, row in simulated.items():  # what each run recorded is what its own row said
        recorded = json.loads((out / "runs" / name / RUN_FILE).read_text())["simulator"]
        assert recorded == {k: row[k] for k in FIGURES}
    for k, name in enumerate(sorted(simulated), 1):  # three figures apart, whatever the clock gave
        path = out / "runs" / name / RUN_FILE
        info = json.loads(path.read_text())
        info["simulator"].update(wall_s=float(k), evicted_keys=10 * k)
        path.write_text(json.dumps(info))
    assert main(["report", str(out), "--no-charts"]) == 0
    rows = _rows(out)
    assert [(rows[n]["wall_s"], rows[n]["evicted_keys"]) for n in sorted(rows)] == [(1.0, 10), (2.0, 20), (3.0, 30)]
    assert all(rows[n][f] == simulated[n][f] for n in rows for f in ("target_cores", "downstream_utilisation"))
