"""`report` on small results folders: every chart with data is written, the rest named as skipped;
summary files carry the extended fields; report.html renders in headless Chromium."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.charts import SPECS
from analysis.ideal import ideal_sliding_log
from analysis.report import build_report
from contract.schema import CHARTS_DIR, REPORT_HTML, REPORT_MD, SUMMARY_CSV, SUMMARY_JSON
from harness.cli.main import main

LIVE_ONLY = {"latency_over_time", "latency_cdf", "retry_storm"}
CHROMIUM_INSTALL = "apt-get update && apt-get install -y chromium"


@pytest.fixture(scope="module")
def live_report(live_folder: Path):
    return build_report(live_folder)


def _charts_on_disk(root: Path) -> set[str]:
    return {p.stem for p in (root / CHARTS_DIR).glob("*.png") if p.with_suffix(".svg").is_file()}


def test_simulated_folder_gets_every_chart_it_has_data_for(sim_folder: Path, capsys) -> None:
    assert main(["report", str(sim_folder)]) == 0
    out = capsys.readouterr()
    assert str(sim_folder / REPORT_HTML) in out.out
    assert "warning: chart skipped: Retry storm" in out.err
    assert _charts_on_disk(sim_folder) == {s.name for s in SPECS} - LIVE_ONLY
    md = (sim_folder / REPORT_MD).read_text()
    assert "chart skipped: Latency CDF, unhealthy downstream: no unhealthy_downstream runs with a client log" in md
    assert all(f"charts/{name}.png" in md for name in {s.name for s in SPECS} - LIVE_ONLY)
    rows = json.loads((sim_folder / SUMMARY_JSON).read_text())["runs"]
    assert len(rows) == 6
    row = next(r for r in rows if r["scenario"] == "boundary_burst" and r["algorithm"] == "fixed_window")
    assert row["over_admission"] == pytest.approx(2.0, abs=0.1)
    assert row["latency_p99_intended_ms"] is None and row["cpu_target_ms_per_1k"] is None
    assert "wall_s" in row  # carried over from the simulator's own summary
    header = (sim_folder / SUMMARY_CSV).read_text().splitlines()[0].split(",")
    assert {"header_truthfulness", "legit_fairness_jain", "goodput_rps", "time_to_recover_s"} <= set(header)


def test_live_folder_gets_every_chart(live_report, live_folder: Path) -> None:
    assert _charts_on_disk(live_folder) == {s.name for s in SPECS}
    assert not [c for c in live_report.charts if c.skipped]
    rows = {r["run"]: r for r in live_report.rows}
    slow, fast = rows["unhealthy_downstream__fixed_window__memory"], rows["unhealthy_downstream__adaptive__memory"]
    assert slow["latency_p99_intended_ms"] > 5 * fast["latency_p99_intended_ms"]
    assert slow["time_to_recover_s"] is not None and slow["goodput_rps"] > 0
    assert slow["cpu_target_ms_per_1k"] > 0 and slow["generator_bound"] is False
    assert slow["false_admits"] is not None  # recomputed: live logs carry ideal_allowed as null
    storm = rows["retry_storm__token_bucket__memory"]
    assert storm["retries_at_retry_after"] > 0 and 0 <= storm["header_truthfulness"] <= 1


def test_ideal_replay_matches_the_simulator(sim_folder: Path) -> None:
    for path in (sim_folder / "runs").glob("*/decisions.parquet"):
        df = pd.read_parquet(path)
        got = ideal_sliding_log(df["t"].to_numpy(), df["key"], df["cost"].to_numpy(), 100, 60)
        assert np.array_equal(got, df["ideal_allowed"].to_numpy()), path.parent.name


RENDER_CHECK = """<script>
window.__errors = [];
window.addEventListener("error", e => window.__errors.push(String(e.message || (e.target && e.target.src))), true);
const realError = console.error;
console.error = (...a) => { window.__errors.push(a.join(" ")); realError(...a); };
window.addEventListener("load", () => {
  const imgs = [...document.querySelectorAll("img.chart")];
  const d = document.createElement("div");
  d.id = "render-check";
  d.dataset.images = imgs.length;
  d.dataset.loaded = imgs.filter(i => i.complete && i.naturalWidth > 0).length;
  d.dataset.errors = window.__errors.length;
  d.textContent = window.__errors.join(" | ");
  document.body.appendChild(d);
});
</script>"""


def test_report_renders_in_headless_chromium(live_report, live_folder: Path, tmp_path: Path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"chromium is not installed and CI must not skip this test (setup: {CHROMIUM_INSTALL})")
        pytest.skip(f"chromium is not installed (setup: {CHROMIUM_INSTALL})")
    page = tmp_path / "report.html"  # a copy with a probe script; the report itself has none
    page.write_text((live_folder / REPORT_HTML).read_text().replace("<head>", "<head>" + RENDER_CHECK, 1))
    proc = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
         "--enable-logging=stderr", "--v=0", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=60, check=False)
    match = re.search(r'<div id="render-check" data-images="(\d+)" data-loaded="(\d+)" data-errors="(\d+)">([^<]*)',
                      proc.stdout)
    assert match, f"page did not finish loading; stderr tail: {proc.stderr[-2000:]}"
    images, loaded, errors, messages = int(match[1]), int(match[2]), int(match[3]), match[4]
    assert errors == 0, messages
    assert images == loaded == len(live_report.drawn) == len(SPECS)
    assert not [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
