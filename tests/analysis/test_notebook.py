"""The notebook runs top to bottom (nbclient) on a crafted results folder, shows what the report
does not (who got the 429s, one key's timeline, an A/B with intervals) and writes nothing into
the folder it reads."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from analysis import views
from analysis.analyze import analyze
from analysis.answers import answers
from analysis.loader import ResultsError, load_results
from analysis.spread import group

pytestmark = pytest.mark.process  # every test here starts processes

NOTEBOOK = Path(__file__).resolve().parents[2] / "analysis" / "notebooks" / "compare.ipynb"


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` with its size and modification time."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(root.rglob("*"))}


def _run(env: dict[str, str], monkeypatch) -> nbformat.NotebookNode:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    return nb


def _texts(nb: nbformat.NotebookNode) -> list[str]:
    return [str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", "")) + str(o.get("data", {}).get("text/html", ""))
            for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]


def test_the_notebook_reads_a_folder_shows_what_the_report_does_not_and_writes_nothing(copy_of, live_folder, monkeypatch):
    folder = copy_of(live_folder)
    before = _snapshot(folder)
    # RESULTS relative to the repository root, as docs/analysis.md writes it for `make notebook`
    # (the kernel runs in the notebook's folder); BASELINE absolute
    relative = os.path.relpath(folder, NOTEBOOK.parents[2])
    nb = _run({"RATELIMIT_RESULTS": relative, "RATELIMIT_BASELINE": str(folder)}, monkeypatch)
    assert _snapshot(folder) == before  # no chart, no summary, nothing rewritten
    text = "\n".join(_texts(nb))
    expected = answers(group(analyze(load_results(folder)).rows))
    assert "".join(f"{a.line()}\n\n" for a in expected) in text
    assert "8 whole runs, 0 left out" in text
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    assert len(images) == 3  # the per-key heat map, the timeline, the A/B
    assert "refused / requests" in text and ("beyond noise" in text or "within noise" in text)
    assert "NaN" not in text and "0.638710" not in text  # cells as the report writes them, no raw floats


def test_the_newest_folder_is_the_default_and_a_place_without_one_says_so(tmp_path):
    with pytest.raises(ResultsError, match="no results folder"):
        views.newest_results(tmp_path)
    for name, age in (("old", 100), ("new", 0)):
        (tmp_path / name / "runs").mkdir(parents=True)
        os.utime(tmp_path / name / "runs", (1_700_000_000 - age, 1_700_000_000 - age))
    (tmp_path / "not-a-folder").mkdir()
    assert views.newest_results(tmp_path) == tmp_path / "new"


def test_the_per_key_view_names_who_was_refused(live_folder):
    folder = analyze(load_results(live_folder))
    runs = views.scenario_runs(folder, "unhealthy_downstream")
    table, _ = views.key_view(runs)
    assert list(table.columns) == ["class", "fixed_window refused / requests", "adaptive refused / requests"]
    frames = views.key_frames(runs)
    fixed = frames["fixed_window"].set_index("key")
    top = table.index[0]
    assert table.loc[top, "fixed_window refused / requests"] == f"{fixed.at[top, 'refused']:,} / {fixed.at[top, 'requests']:,}"
    assert fixed["refused"].sum() == next(a.row["rejected"] for a in runs if a.row["algorithm"] == "fixed_window")
