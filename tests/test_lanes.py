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


def item(path: str, *fixturenames: str, marks: tuple[str, ...] = ()) -> SimpleNamespace:
    """A collected test as the hook sees it: its file, its fixtures, its marks."""
    node = SimpleNamespace(path=path, fixturenames=list(fixturenames), marks=list(marks))
    node.add_marker = node.marks.append
    node.get_closest_marker = lambda name: name if name in node.marks else None
    return node


def test_a_process_fixture_marks_its_tests_and_only_those() -> None:
    items = [item("a.py", "tmp_path", "start"), item("a.py", "targets", "module_start"),
             item("a.py", "client", "redis_server", "namespace"), item("a.py", "redis_cluster"), item("a.py", "tmp_path", "capsys")]
    lanes.pytest_collection_modifyitems(None, items)  # type: ignore[arg-type]
    assert [i.marks for i in items] == [["process"]] * 4 + [[]]


def test_files_with_a_process_or_slow_test_come_first_each_whole_in_its_order() -> None:
    items = [item("a.py", "tmp_path"), item("b.py", "tmp_path"), item("b.py", "start"), item("c.py"),
             item("d.py", marks=("slow",)), item("d.py"), item("e.py")]
    lanes.pytest_collection_modifyitems(None, items)  # type: ignore[arg-type]
    assert [(i.path, i.fixturenames[-1:]) for i in items] == [
        ("b.py", ["tmp_path"]), ("b.py", ["start"]), ("d.py", []), ("d.py", []), ("a.py", ["tmp_path"]), ("c.py", []), ("e.py", [])]
