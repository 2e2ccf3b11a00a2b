"""What every "bad input exits 2" test of a live campaign checks, in one place."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import yaml

from harness.cli.main import main


@pytest.fixture
def refused_run(tmp_path, capsys) -> Callable[..., str]:
    """``refused_run(campaign, *args)``: ``run_bench.py run`` of that campaign (a dict) refuses
    it with exit 2, one line on stderr and no results folder; returns the line."""

    def run(campaign: dict[str, Any], *args: str) -> str:
        path, out = tmp_path / "refused.yaml", tmp_path / "never"
        path.write_text(yaml.safe_dump(campaign))
        assert main(["run", str(path), "--out", str(out), *args]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1, err
        assert not out.exists()
        return err

    return run
