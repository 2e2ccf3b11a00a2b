"""A degraded run has its data: the analysis analyses it and names it degraded, with its reasons."""

from __future__ import annotations

import json
from pathlib import Path

from analysis.analyze import analyze
from analysis.loader import load_results


def test_a_degraded_run_is_analysed_and_named_degraded(live_folder: Path, copy_of) -> None:
    root = copy_of(live_folder)
    run_json = next((root / "runs").glob("*/run.json"))
    info = json.loads(run_json.read_text())
    run_json.write_text(json.dumps({**info, "status": "degraded", "degraded_reasons": ["1 of 4 requests (25.0%) failed: 503 1"]}))
    analysis = analyze(load_results(root))
    [row] = [r for r in analysis.rows if r["run"] == run_json.parent.name]
    assert row["status"] == "degraded"
    assert f"{run_json.parent.name}: run degraded: 1 of 4 requests (25.0%) failed: 503 1" in analysis.warnings
