"""Headless Chromium on a report at PAGE_WIDTH px: what a reader sees, measured by a probe script
in a copy of the page (the report itself carries only its sorting script), its charts read from
the report's own folder."""

from __future__ import annotations

import html
import json
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
  document.querySelectorAll("details").forEach(d => { d.open = true; });  // what a reader unfolds
  const all = [...document.images], imgs = [...document.querySelectorAll("img.chart")];
  const ratios = imgs.map(i => i.getBoundingClientRect().width / i.naturalWidth);
  const th = [...document.querySelectorAll("table.sortable th")].filter(h => h.textContent.startsWith("over-admission")).pop();
  const table = th.closest("table"), col = th.cellIndex;
  const column = () => [...table.tBodies[0].rows].map(r => r.cells[col].textContent).join(";");
  table.tHead.rows[0].cells[col].click();
  const up = column();
  table.tHead.rows[0].cells[col].click();
  const d = document.createElement("div");
  d.id = "render-check";
  d.dataset.images = all.length;
  d.dataset.loaded = all.filter(i => i.complete && i.naturalWidth > 0).length;
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
FIRST_SCREEN = """<script>
window.addEventListener("load", () => {
  const d = document.createElement("div");
  d.id = "render-check";
  const seen = [...document.querySelectorAll(".answer")].map(a => ({key: a.dataset.key, runs: a.dataset.runs,
    sentence: a.querySelector("p.says").textContent, bottom: a.querySelector("p.says").getBoundingClientRect().bottom}));
  const thumbs = [...document.querySelectorAll("img.thumb")].map(i => ({src: i.getAttribute("src"),
    bottom: i.getBoundingClientRect().bottom, loaded: i.complete && i.naturalWidth > 0}));
  d.dataset.found = JSON.stringify({answers: seen, thumbs: thumbs, height: window.innerHeight});
  document.body.appendChild(d);
});
</script>"""
"""The answers and the thumbnails of their charts, where they end on the page (px from its top)."""
PAGE_WIDTH = 1000
SCREEN_HEIGHT = 800
"""The first screen: 1,000 x 800 px."""


def render(page: Path, profile: Path, height: int = 1000) -> dict[str, str]:
    """Load ``page`` (with its probe) in headless Chromium PAGE_WIDTH x ``height`` px; the probe's findings."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"chromium is not installed and CI must not skip this test (setup: {CHROMIUM_INSTALL})")
        pytest.skip(f"chromium is not installed (setup: {CHROMIUM_INSTALL})")
    proc = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
         f"--window-size={PAGE_WIDTH},{height}", "--hide-scrollbars", "--enable-logging=stderr", "--v=0", "--dump-dom",
         page.as_uri()],
        capture_output=True, text=True, timeout=60, check=False)
    match = re.search(r'<div id="render-check"([^>]*)>([^<]*)', proc.stdout)
    assert match, f"page did not finish loading; stderr tail: {proc.stderr[-2000:]}"
    assert not [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
    found = {k: html.unescape(v) for k, v in re.findall(r'data-(\w+)="([^"]*)"', match[1])}
    return {**found, "messages": match[2]}


def probed(report_html: Path, probe: str, tmp_path: Path) -> Path:
    """A copy of the report with ``probe`` in its head, its links read from the report's own folder."""
    page = tmp_path / "report.html"
    base = f'<base href="{report_html.parent.as_uri()}/">'
    page.write_text(report_html.read_text().replace("<head>", "<head>" + base + probe, 1))
    return page


def first_screen(report_html: Path, tmp_path: Path) -> dict:
    """What the first screen shows: each answer (its sentence as rendered, where it ends) and each
    chart thumbnail (where it ends, whether it loaded)."""
    got = render(probed(report_html, FIRST_SCREEN, tmp_path), tmp_path / "profile", SCREEN_HEIGHT)
    return json.loads(got["found"])


def numbers(column: str) -> list[float]:
    return [float(c.replace(",", "").rstrip("x%")) for c in column.split(";") if c != "n/a"]


def fits_the_page(report_html: Path, charts: int, tmp_path: Path) -> None:
    """Unfolded: every chart loads (from the report's charts/ folder, each once); no sideways
    scrolling; no full-size chart shown under 60% of its drawn width; a numeric column
    (over-admission, of the full table: every run) sorts up, then down, by clicks on its header."""
    got = render(probed(report_html, RENDER_CHECK, tmp_path), tmp_path / "profile")
    assert int(got["errors"]) == 0, got["messages"]
    assert int(got["images"]) == int(got["loaded"]) == charts
    assert int(got["scroll"]) <= PAGE_WIDTH
    assert int(got["tables"]) > 0 and int(got["overflow"]) == 0
    assert float(got["ratio"]) >= 0.6
    up, down = numbers(got["up"]), numbers(got["down"])
    assert up == sorted(up) and down == sorted(down, reverse=True) and len(set(up)) > 1
