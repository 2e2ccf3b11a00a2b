"""Every Markdown page the code and the docs refer to exists: a reader sent to a page of docs/ (or
to a design page) finds it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from contract.schema import REPORT_MD

ROOT = Path(__file__).resolve().parents[1]
MENTION = re.compile(r"(?<![\w/.:-])((?:[\w.-]+/)*[\w-]+\.md)\b")
"""A ``*.md`` path as code and prose write it (not part of a URL)."""
GENERATED = {REPORT_MD}
"""Names of files the suite writes into a results folder, not pages of the repository."""


def tracked() -> list[Path]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [ROOT / p for p in out.splitlines() if p.endswith((".py", ".md", ".yaml", ".toml", ".ipynb")) or p == "Makefile"]


def missing_pages() -> list[str]:
    missing = []
    for path in tracked():
        if not path.is_file():  # deleted in the work tree, not yet committed
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for name in MENTION.findall(line):
                if name in GENERATED:
                    continue
                if not ((ROOT / name).is_file() or (path.parent / name).is_file()):
                    missing.append(f"{path.relative_to(ROOT)}:{number}: {name}")
    return missing


@pytest.mark.process
def test_every_mentioned_markdown_page_exists():
    assert missing_pages() == []


def test_the_check_sees_a_missing_page():
    gone, page = "DESIGN" + ".md", "docs/architecture" + ".md"  # split: this file is scanned too
    assert MENTION.findall(f"see {gone} and {page}, not https://x.org/a.md") == [gone, page]
    assert not (ROOT / gone).exists() and (ROOT / page).is_file()
