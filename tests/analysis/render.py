"""Headless Chromium on a report at PAGE_WIDTH px: what a reader sees, measured by a probe script
in a copy of the page (the report itself carries only its sorting script)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

CHROMIUM_INSTALL = "apt-get update && apt-get install -y chromium"
RENDER_CHECK = """<script>
window.__errors = [];
window.addEventListener("error", e => window.__errors.push(String(e.message || (e.target && e.target.src))), true);
const realError = console.error;
console.error = (...a) => { window.__errors.push(a.join(" ")); realError(...a); };
window.addEventListener("load", () => {
  const imgs = [...document.querySelectorAll("img.chart")];
  const ratios = imgs.map(i => i.getBoundingClientRect().width / i.naturalWidth);
  const th = [...document.querySelectorAll("table.sortable th")].filter(h => h.textContent.startsWith("over-admission")).pop();
  const table = th.closest("table"), col = th.cellIndex;
  const column = () => [...table.tBodies[0].rows].map(r => r.cells[col].textContent).join(";");
  table.tHead.rows[0].cells[col].click();
  const up = column();
  table.tHead.rows[0].cells[col].click();
  const d = document.createElement("div");
  d.id = "render-check";
  d.dataset.images = imgs.length;
  d.dataset.loaded = imgs.filter(i => i.complete && i.naturalWidth > 0).length;
  d.dataset.errors = window.__errors.length;
  d.dataset.scroll = document.documentElement.scrollWidth;
  // tables sit in scroll boxes, so the page never widens: a box that scrolls is a table that does not fit
  // (wide tables, the full ones too, are split in parts that do)
  const boxes = [...document.querySelectorAll(".scroll")];
  d.dataset.tables = boxes.length;
  d.dataset.overflow = Math.max(0, ...boxes.map(b => b.scrollWidth - b.clientWidth));
  d.dataset.ratio = Math.min(1, ...ratios).toFixed(3);
  d.dataset.up = up;
  d.dataset.down = column();
  d.textContent = window.__errors.join(" | ");
  document.body.appendChild(d);
});
</script>"""
PAGE_WIDTH = 1000


def render(page: Path, profile: Path) -> dict[str, str]:
    """Load ``page`` (with RENDER_CHECK) in headless Chromium PAGE_WIDTH px wide; the probe's findings."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"chromium is not installed and CI must not skip this test (setup: {CHROMIUM_INSTALL})")
        pytest.skip(f"chromium is not installed (setup: {CHROMIUM_INSTALL})")
    proc = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
         f"--window-size={PAGE_WIDTH},1000", "--hide-scrollbars", "--enable-logging=stderr", "--v=0", "--dump-dom",
         page.as_uri()],
        capture_output=True, text=True, timeout=60, check=False)
    match = re.search(r'<div id="render-check"([^>]*)>([^<]*)', proc.stdout)
    assert match, f"page did not finish loading; stderr tail: {proc.stderr[-2000:]}"
    assert not [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
    found = dict(re.findall(r'data-(\w+)="([^"]*)"', match[1]))
    return {**found, "messages": match[2]}


def numbers(column: str) -> list[float]:
    return [float(c.replace(",", "").rstrip("x%")) for c in column.split(";") if c != "n/a"]


def fits_the_page(report_html: Path, charts: int, tmp_path: Path) -> None:
    """Every chart loads; no sideways scrolling; no chart shown under 60% of its drawn width; a
    numeric column (over-admission, of the full table: every run) sorts up, then down, by clicks on its header."""
    page = tmp_path / "report.html"
    page.write_text(report_html.read_text().replace("<head>", "<head>" + RENDER_CHECK, 1))
    got = render(page, tmp_path / "profile")
    assert int(got["errors"]) == 0, got["messages"]
    assert int(got["images"]) == int(got["loaded"]) == charts
    assert int(got["scroll"]) <= PAGE_WIDTH
    assert int(got["tables"]) > 0 and int(got["overflow"]) == 0
    assert float(got["ratio"]) >= 0.6
    up, down = numbers(got["up"]), numbers(got["down"])
    assert up == sorted(up) and down == sorted(down, reverse=True) and len(set(up)) > 1
