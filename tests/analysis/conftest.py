"""Small results folders, made once per session: one simulated (by the real simulator), one
synthetic live-style folder with client logs and CPU samples."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from contract.schema import ALGORITHM_NAMES
from harness.sim.runner import execute, make_plan
from targets.algorithms import Policy

from .synth import make_live_folder


def make_sim_folder(out: Path, scenarios: list[str], algorithms: list[str]) -> Path:
    plan = make_plan(name="sim-test", policy=Policy(100, 60), algorithms=algorithms, scenarios=scenarios,
                     traces=[], algorithm_params=[], scenario_params=[], seed=1)
    execute(plan, out)
    return out


@pytest.fixture(scope="session")
def sim_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_sim_folder(tmp_path_factory.mktemp("sim") / "results", ["boundary_burst", "page_load_burst"],
                           ["fixed_window", "sliding_log", "token_bucket"])


@pytest.fixture(scope="session")
def wide_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every algorithm: the widest tables and the most panels a report draws."""
    return make_sim_folder(tmp_path_factory.mktemp("wide") / "results", ["boundary_burst", "page_load_burst", "steady"],
                           list(ALGORITHM_NAMES))


@pytest.fixture(scope="session")
def live_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_live_folder(tmp_path_factory.mktemp("live") / "results")


@pytest.fixture
def copy_of(tmp_path: Path):
    def copy(src: Path) -> Path:
        dst = tmp_path / src.parent.name / src.name
        shutil.copytree(src, dst)
        return dst
    return copy
