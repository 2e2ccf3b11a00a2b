"""The comparison notebook runs top to bottom (nbclient) against a small results folder."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[2] / "analysis" / "notebooks" / "compare.ipynb"


def test_notebook_executes(live_folder: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("RATELIMIT_RESULTS", str(live_folder))
    monkeypatch.setenv("RATELIMIT_BASELINE", str(live_folder))
    monkeypatch.setenv("RATELIMIT_CHARTS", str(tmp_path))  # leave the shared fixture folder as it was
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    text = "\n".join(str(o.get("text", "")) for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "6 whole runs" in text
    assert "no regressions" in text
    assert (tmp_path / "charts" / "over_admission.png").is_file()
