"""The summary's ``system`` column: every row says who limited, written by the one summary writer."""

from __future__ import annotations

import csv
import io
import json

from contract.summary import summary_csv, summary_json


def test_a_row_without_system_is_the_suites_and_a_peers_row_keeps_its_own():
    rows = [{"scenario": "steady", "algorithm": "gcra", "store": "memory"},
            {"scenario": "steady", "algorithm": "nginx", "system": "nginx", "store": "zone"}]
    runs = json.loads(summary_json(rows))["runs"]
    assert [list(r) for r in runs] == [["scenario", "algorithm", "system", "store"]] * 2
    assert [r["system"] for r in runs] == ["suite", "nginx"]
    table = list(csv.DictReader(io.StringIO(summary_csv(rows))))
    assert [(r["algorithm"], r["system"]) for r in table] == [("gcra", "suite"), ("nginx", "nginx")]
