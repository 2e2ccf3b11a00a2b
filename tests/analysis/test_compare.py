"""`compare` flags a run whose P99 doubled and one whose over-admission rose (exit code 1)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq

from analysis.compare import compare
from contract.schema import CLIENT_FILE, DECISIONS_FILE
from harness.cli.main import main


def _slow_down(run: Path, factor: float) -> None:
    table = pq.read_table(run / CLIENT_FILE)
    latency = pc.subtract(table["done_t"], table["sent_t"])
    done = pc.add(table["sent_t"], pc.multiply(latency, factor))
    pq.write_table(table.set_column(table.schema.get_field_index("done_t"), "done_t", done), run / CLIENT_FILE)


def _admit_all(run: Path) -> None:
    table = pq.read_table(run / DECISIONS_FILE)
    allowed = pc.or_(table["allowed"], True)
    pq.write_table(table.set_column(table.schema.get_field_index("allowed"), "allowed", allowed), run / DECISIONS_FILE)


def test_compare_flags_p99_and_over_admission(live_folder: Path, copy_of, capsys) -> None:
    b = copy_of(live_folder)
    _slow_down(b / "runs" / "unhealthy_downstream__adaptive__memory", 3.0)
    _admit_all(b / "runs" / "boundary_burst__token_bucket__memory")

    result = compare(live_folder, b)
    flagged = "\n".join(result.regressions)
    assert "unhealthy_downstream__adaptive__memory: P99" in flagged
    assert "boundary_burst__token_bucket__memory: over-admission rose 1.00x -> 2.00x" in flagged
    assert len(result.regressions) == 2

    assert main(["compare", str(live_folder), str(b)]) == 1
    out = capsys.readouterr().out
    assert "REGRESSIONS (2)" in out
    assert main(["compare", str(live_folder), str(live_folder)]) == 0
    assert "no regressions" in capsys.readouterr().out
    assert main(["compare", str(live_folder), str(b), "--threshold", "4"]) == 1  # over-admission still flagged
