"""`compare` flags a run whose P99 tripled and one whose over-admission rose beyond its noise
(exit code 1); it fails on runs it cannot judge, names what differs besides the code first, and
refuses to call a regression across different policies (exit code 3)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from analysis.compare import compare
from contract.schema import CLIENT_FILE, DECISIONS_FILE, RUN_FILE
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
    _admit_all(b / "runs" / "retry_storm__token_bucket__memory")

    result = compare(live_folder, b)
    flagged = "\n".join(result.regressions)
    assert "unhealthy_downstream__adaptive__memory: P99 rose 47.6 ms -> 141.7 ms (3.0x, threshold 2x; " \
        "one run a side: only the threshold)" in flagged
    assert "retry_storm__token_bucket__memory: over-admission rose 1.45x -> 10.35x " \
        "(tolerance 0.01; past its policy's bound of 2.00x: exact)" in flagged
    assert len(result.regressions) == 2

    assert main(["compare", str(live_folder), str(b)]) == 1
    out = capsys.readouterr().out
    assert "REGRESSIONS (2)" in out
    assert main(["compare", str(live_folder), str(live_folder)]) == 0
    assert "no regressions" in capsys.readouterr().out
    assert main(["compare", str(live_folder), str(b), "--threshold", "4"]) == 1  # over-admission still flagged


def test_the_verdict_comes_first_then_only_what_changed_in_the_suites_units(live_folder: Path, copy_of, capsys) -> None:
    b = copy_of(live_folder)
    _slow_down(b / "runs" / "unhealthy_downstream__adaptive__memory", 3.0)
    assert main(["compare", str(live_folder), str(b)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "REGRESSIONS (1) at 95% confidence family-wise (Bonferroni over 13 tests), 1 run a side:"
    body = "\n".join(lines)
    assert "P99 (ms)" in body and " ms" in body and "share" not in body
    assert "fixed_window" not in body  # unchanged runs are not listed
    assert main(["compare", str(live_folder), str(b), "--all"]) == 1
    assert "fixed_window" in capsys.readouterr().out
    assert main(["compare", str(live_folder), str(live_folder)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("no regressions") and "nothing changed" in out


def test_the_comparison_fits_an_80_column_terminal(live_folder: Path, copy_of) -> None:
    import argparse
    import io

    from rich.console import Console

    from harness.cli.analyze import show_comparison

    b = copy_of(live_folder)
    _slow_down(b / "runs" / "unhealthy_downstream__adaptive__memory", 3.0)
    _admit_all(b / "runs" / "retry_storm__token_bucket__memory")
    buf = io.StringIO()
    args = argparse.Namespace(folder_a=live_folder, folder_b=b, all=True, allow_missing=False, wide=False)
    show_comparison(compare(live_folder, b), args, Console(file=buf, width=80))
    text = buf.getvalue()
    assert "unhealthy_downstream" in text and max(len(line) for line in text.splitlines()) <= 80


@pytest.mark.parametrize("flags", [["--threshold", "nan"], ["--threshold", "inf"], ["--threshold", "-3"],
                                   ["--tolerance", "nan"], ["--tolerance", "-0.1"], ["--tolerance", "inf"]])
def test_a_threshold_that_cannot_judge_is_refused(live_folder: Path, capsys, flags) -> None:
    assert main(["compare", str(live_folder), str(live_folder), *flags]) == 2
    err = capsys.readouterr().err.strip()
    # non-finite values stop at the command line's number type, negative ones at the comparison
    assert err.startswith((f"error: {flags[0]} must be a finite", f"error: argument {flags[0]}: '{flags[1]}': expected a finite"))
    assert len(err.splitlines()) == 1


def _half_written_run_json(run: Path) -> None:
    text = (run / RUN_FILE).read_text()
    (run / RUN_FILE).write_text(text[: len(text) // 2])


def _truncated_parquet(run: Path) -> None:
    data = (run / DECISIONS_FILE).read_bytes()
    (run / DECISIONS_FILE).write_bytes(data[: len(data) // 2])


def _failed(run: Path) -> None:
    info = json.loads((run / RUN_FILE).read_text())
    (run / RUN_FILE).write_text(json.dumps({**info, "status": "failed", "error": "target died"}))


@pytest.mark.parametrize("damage", [lambda run: shutil.rmtree(run), _half_written_run_json, _truncated_parquet, _failed])
def test_a_run_the_candidate_lost_fails_the_gate_unless_allowed(live_folder: Path, copy_of, capsys, damage) -> None:
    b = copy_of(live_folder)
    damage(b / "runs" / "boundary_burst__token_bucket__memory")
    assert main(["compare", str(live_folder), str(b)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("INCOMPLETE: 1 run(s) missing, unreadable, failed or degraded")
    assert "in B: boundary_burst__token_bucket__memory" in out
    assert main(["compare", str(live_folder), str(b), "--allow-missing"]) == 0
    assert capsys.readouterr().out.startswith("no regressions")


