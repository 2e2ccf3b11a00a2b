"""The comparison notebook runs top to bottom (nbclient) against a small results folder, and its
first output is the answer sentences of the report and the terminal."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

from analysis.analyze import analyze
from analysis.answers import answers
from analysis.loader import load_results

NOTEBOOK = Path(__file__).resolve().parents[2] / "analysis" / "notebooks" / "compare.ipynb"


def test_notebook_executes(live_folder: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("RATELIMIT_RESULTS", str(live_folder))
    monkeypatch.setenv("RATELIMIT_BASELINE", str(live_folder))
    monkeypatch.setenv("RATELIMIT_CHARTS", str(tmp_path))  # leave the shared fixture folder as it was
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    outputs = [str(o.get("text", "")) for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    text = "\n".join(outputs)
    expected = answers(analyze(load_results(live_folder)).rows)
    assert [a.key for a in expected] == ["over_admission", "bounded_p99", "throughput", "retries"]
    assert outputs[0] == "".join(f"{a.line()}\n\n" for a in expected)
    assert "8 whole runs" in text
    assert "no regressions" in text
    assert (tmp_path / "charts" / "over_admission.png").is_file()
    assert (tmp_path / "charts" / "envelope-unhealthy_downstream.png").is_file()
