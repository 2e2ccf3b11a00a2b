"""The lanes' guard (tests/lanes.py): a test without the ``process`` mark cannot start a process,
one with it can, and a test using a fixture that starts processes is marked by it."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import pytest

from tests import lanes


def test_an_unmarked_test_cannot_start_a_process() -> None:
    with pytest.raises(lanes.UnmarkedProcess, match=r"test_lanes.py::test_an_unmarked_test_cannot_start_a_process starts"):
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    assert lanes.started == [repr([sys.executable, "-c", "pass"])]
    lanes.started.clear()  # refused as it should be: the guard's own check after the test has nothing to fail


@pytest.mark.process
def test_a_marked_test_starts_one() -> None:
    assert subprocess.run([sys.executable, "-c", "pass"], check=True).returncode == 0


def test_a_process_fixture_marks_its_tests_and_only_those() -> None:
    def item(*fixturenames: str) -> SimpleNamespace:
        node = SimpleNamespace(fixturenames=list(fixturenames), marks=[])
        node.add_marker = node.marks.append
        return node

    items = [item("tmp_path", "start"), item("targets", "module_start"), item("client", "redis_server", "namespace"),
             item("redis_cluster"), item("tmp_path", "capsys")]
    lanes.pytest_collection_modifyitems(None, items)  # type: ignore[arg-type]
    assert [i.marks for i in items] == [["process"]] * 4 + [[]]
