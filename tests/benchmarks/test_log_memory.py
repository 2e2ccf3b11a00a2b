"""``run_bench.py bench log-memory``: the reader's peak RSS by log size, side by side, each step
in a fresh process; its sizes bounded as every benchmark's are."""

from __future__ import annotations

import shutil
from importlib import import_module
from types import SimpleNamespace

import pytest

from benchmarks.log_memory import REFUSED, STEPS, main, table


def test_the_table_puts_the_sizes_side_by_side_with_the_bytes_per_extra_line() -> None:
    figures = {1000: {s: (1000, 100 << 10, 200 << 10, 0, 0) for s in STEPS},
               2000: {s: (2000, 100 << 10, (200 << 10) + 1, 50 << 10, 0) for s in STEPS}}
    figures[1000]["replayed"] = (0, 100 << 10, 300 << 10, 350 << 10, 500 << 10)
    figures[2000]["replayed"] = (REFUSED, 100 << 10, 150 << 10, 0, 160 << 10)
    out = table([1000, 2000], figures, {1000: 0.1, 2000: 0.2})
    assert [c.header for c in out.columns] == ["step", "1,000 lines (0 MiB)", "2,000 lines (0 MiB)",
                                               "bytes per line, 1,000 -> 2,000"]
    assert list(out.columns[0].cells) == list(STEPS) and STEPS[-1] == "replayed"
    assert next(iter(out.columns[1].cells)) == "200 MiB (+100 over imports)"
    assert next(iter(out.columns[2].cells)) == "200 MiB (+100 over imports; worker 50)"
    assert list(out.columns[1].cells)[-1] == "300 MiB (+200 over imports; worker 350; with its workers 500 PSS)"
    assert list(out.columns[2].cells)[-1] == "150 MiB (+50 over imports; with its workers 160 PSS; refused: past the bound)"
    assert list(out.columns[3].cells) == ["1"] * 3 + ["-"]  # 1 KiB over 1,000 lines; no growth across a refusal


@pytest.mark.parametrize(("lines", "message"), [("1e12", "out of bounds"), ("1000", "two sizes or more"),
                                                ("a,b", "line counts separated by commas")])
def test_bad_sizes_are_one_line_exit_2(lines: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--lines", lines])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and message in err and err.count("\n") == 1


@pytest.mark.parametrize("bench", ["log_memory", "traffic"])
def test_a_log_the_free_disk_cannot_hold_is_refused_before_it_is_written(bench: str, monkeypatch: pytest.MonkeyPatch,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """The log is on disk, not in memory: its bound is the free disk of TMPDIR (150 bytes a line)."""
    monkeypatch.setattr(shutil, "disk_usage", lambda _where: SimpleNamespace(free=100 << 20))
    with pytest.raises(SystemExit) as exited:
        import_module(f"benchmarks.{bench}").main(["--lines", "1000000,2000000" if bench == "log_memory" else "1000000"])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and err.count("\n") == 1
    assert "--lines 2,000,000" in err if bench == "log_memory" else "--lines 1,000,000" in err
    assert "about 0.3 GiB of disk" in err if bench == "log_memory" else "about 0.1 GiB of disk" in err
    assert "0.1 GiB are free (TMPDIR says where)" in err
