"""docs/architecture.md held to the code: its layout lists exactly the modules of every folder, and
every module file it names exists (nothing run; a moved or new module fails here until the page
says so)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs/architecture.md"
PACKAGES = ("contract", "targets", "scenarios", "analysis", "harness", "benchmarks")


def _layout(text: str) -> dict[str, set[str]]:
    """The "The layout" block: a folder's line (``folder/  name name``) and its indented continuations."""
    section = text.split("## The layout\n", 1)[1]
    block = section.split("```\n", 2)[1]
    folders: dict[str, set[str]] = {}
    current = ""
    for line in block.splitlines():
        if not line.startswith(" "):
            current, _, line = line.partition(" ")
            folders[current] = set()
        folders[current].update(line.split())
    return folders


def _code() -> dict[str, set[str]]:
    folders: dict[str, set[str]] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if path.name != "__init__.py" and "__pycache__" not in path.parts:
                folders.setdefault(f"{path.parent.relative_to(ROOT).as_posix()}/", set()).add(path.stem)
    return folders


def test_the_layout_lists_every_module_of_every_folder_and_no_other():
    listed, code = _layout(DOC.read_text()), _code()
    assert sorted(listed) == sorted(code), "folders: listed but absent, or present but not listed"
    wrong = {folder: {"not listed": sorted(code[folder] - names), "no such module": sorted(names - code[folder])}
             for folder, names in listed.items() if names != code[folder]}
    assert not wrong, wrong


def test_every_module_file_the_page_names_exists():
    named = set(re.findall(r"`([\w/.-]+\.py)`", DOC.read_text()))
    files = {p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*.py") if ".venv" not in p.parts}
    basenames = {Path(f).name for f in files}
    missing = sorted(n for n in named if (n not in files and not any(f.endswith("/" + n) for f in files))
                     and ("/" in n or n not in basenames))
    assert not missing, missing


def test_the_layout_reader_sees_a_missing_module():
    """The negative control: a folder's module left out of the block is reported."""
    text = DOC.read_text()
    listed = _layout(text.replace(" spawn ", " ", 1) if " spawn " in text else text.replace(" spawn\n", "\n", 1))
    assert "spawn" not in listed["harness/processes/"]
    assert listed["harness/processes/"] != _code()["harness/processes/"]
