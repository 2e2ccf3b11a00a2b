"""A peer's virtual twin (the suite's model of what it claims, replayed on the same traffic) is a row
right after the live row, in the summary, the report and the grouped rows the terminal prints; it is
never a run the answers speak of. On a crafted folder: a url peer's live row and the twin the
runner writes (the real simulator's decisions)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from analysis.answers import answers
from analysis.report import build_report
from analysis.spread import group
from contract.schema import DECIDED_BY_CLIENT, REPEAT_MARK, TWIN_FILE
from harness.sim.simulator import simulate
from scenarios import build_model
from targets.algorithms import Policy, build_params

from .synth import T0, client_table, decisions_table, write_run


def _url_run(root, name: str, admitted: int, twin: str | None) -> Path:
    """A boundary burst of 20 + 20 at L 20 per 1 s as a url peer answered it (``admitted`` of 40),
    with the twin of the algorithm it claims beside it."""
    t = T0 + np.repeat([0.835, 1.165], 20)
    allowed = np.arange(40) < admitted
    rid = [f"r{i}" for i in range(40)]
    d = decisions_table(t, np.array(["k"] * 40), allowed, np.array(["abusive"] * 40), rid, name)
    path = write_run(root, "boundary_burst", name, d, client_table(rid, t, t, t + 0.01, np.where(allowed, 200, 429), np.ones(40)),
                     {"system": "url", "decided_from": DECIDED_BY_CLIENT})
    if twin is not None:
        model = build_model("boundary_burst", 20, 1.0, seed=1, overrides={"instant": 1, "boundaries": 1, "delta_s": 0.33})
        table, _ = simulate(model, twin, Policy(20, 1), build_params(twin, Policy(20, 1)))
        pq.write_table(table, path / TWIN_FILE)
    return path


def test_the_twin_row_follows_its_live_row_and_no_answer_speaks_of_it(tmp_path):
    _url_run(tmp_path, "gw", 40, "fixed_window")  # claims a fixed window, let 2x through: as claimed
    _url_run(tmp_path, "gw-bare", 20, None)
    report = build_report(tmp_path, charts=False)  # its rows and text: no chart read
    names = [r["run"] for r in report.rows]
    assert names == ["boundary_burst__gw__memory", "boundary_burst__gw__memory~twin", "boundary_burst__gw-bare__memory"]
    live, twin = report.rows[0], report.rows[1]
    assert (twin["algorithm"], twin["system"], twin["kind"], twin["twin_of"]) == ("gw twin: fixed_window", "twin", "twin",
                                                                                  live["run"])
    assert (twin["requests"], twin["admitted"], twin["over_admission"]) == (40, 40, 2.0)
    assert (twin["limit"], twin["window_s"], twin["latency_p99_intended_ms"]) == (20.0, 1.0, None)
    assert (twin["decided_from"], twin["store"]) == ("model", live["store"])  # beside the live row in every table
    assert live["over_admission"] == 2.0 and live["twin_of"] is None
    found = answers(report.groups)
    assert [a.key for a in found] == ["over_admission", "cpu"] and all("~twin" not in run for a in found for run in a.runs)
    assert found[0].runs == ("boundary_burst__gw__memory", "boundary_burst__gw-bare__memory")
    md = (tmp_path / "report.md").read_text()
    assert md.index("| gw twin: fixed_window | memory | n/a | n/a | model |") > md.index("| gw |")  # after it, labelled


def test_repeats_of_a_twin_group_as_their_live_runs_do(tmp_path):
    for k in (1, 2):
        path = _url_run(tmp_path, "gw", 40 - k, "sliding_log")
        path.rename(path.with_name(f"{path.name}{REPEAT_MARK}{k}"))
    report = build_report(tmp_path, charts=False)  # its rows and text: no chart read
    grouped = group(report.rows)
    assert [(g["run"], g["repeats"]) for g in grouped] == [("boundary_burst__gw__memory", 2),
                                                           ("boundary_burst__gw__memory~twin", 2)]
    assert grouped[1]["over_admission"] == 1.0 and grouped[1]["algorithm"] == "gw twin: sliding_log"
