"""`report` on small results folders: every chart with data is written and nothing is said about the
rest; summary files carry the extended fields; report.html renders in headless Chromium at 1,000 px
without sideways scrolling or shrunken charts, answers first, with sortable tables."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.answers import Answer
from analysis.charts import SPECS
from analysis.document import FIRST_SCREEN_CHARTS, document
from analysis.ideal import ideal_sliding_log
from analysis.report import build_report
from contract.schema import CHARTS_DIR, REPORT_HTML, REPORT_MD, SUMMARY_CSV, SUMMARY_JSON
from harness.cli.main import main

from .consistency import contradictions
from .render import SCREEN_HEIGHT, first_screen, fits_the_page

LIVE_ONLY = {"latency_over_time", "latency_cdf", "retry_storm", "ramp_p99"}
LOGGED_LIMIT_ONLY = {"adaptive_limit"}
"""Drawn from runs whose limiter logs its limit (neither folder here has one: test_adaptive_h2h.py draws it)."""


@pytest.fixture(scope="module")
def live_report(live_folder: Path):
    return build_report(live_folder)


@pytest.fixture(scope="module")
def sim_report(sim_folder: Path):
    """The simulated folder's report, drawn once for the tests that read it (each draw is seconds of CPU)."""
    return build_report(sim_folder)


@pytest.fixture(scope="module")
def wide_report(wide_folder: Path):
    return build_report(wide_folder)


def _charts_on_disk(root: Path) -> set[str]:
    return {p.stem for p in (root / CHARTS_DIR).glob("*.png") if p.with_suffix(".svg").is_file()}


def _specs_on_disk(root: Path) -> set[str]:
    return {stem.split("-", 1)[0] for stem in _charts_on_disk(root)}


def test_no_charts_writes_the_same_summary_and_a_report_that_says_none_was_drawn(live_folder: Path, copy_of, capsys) -> None:
    bare = copy_of(live_folder)
    assert main(["report", str(bare), "--no-charts"]) == 0
    out = capsys.readouterr()
    assert "chart 1/" not in out.err and f"warning: no charts drawn (--no-charts): run_bench.py report {bare} draws them" in out.err
    assert not list((bare / CHARTS_DIR).glob("*.png")) and "charts/" not in (bare / REPORT_MD).read_text()
    without = json.loads((bare / SUMMARY_JSON).read_text())["runs"]
    assert main(["report", str(bare)]) == 0  # as the warning says: the charts, and the same rows
    assert _charts_on_disk(bare) and "no charts drawn" not in (bare / REPORT_MD).read_text()
    assert json.loads((bare / SUMMARY_JSON).read_text())["runs"] == without


def test_simulated_folder_gets_every_chart_it_has_data_for(sim_folder: Path, capsys) -> None:
    assert main(["report", str(sim_folder)]) == 0
    out = capsys.readouterr()
    assert str(sim_folder / REPORT_HTML) in out.out
    assert "warning" not in out.err and "skipped" not in out.out + out.err
    assert "chart 1/" in out.err  # progress while the charts are drawn
    assert _specs_on_disk(sim_folder) == {s.name for s in SPECS} - LIVE_ONLY - LOGGED_LIMIT_ONLY - {"in_flight"}  # none ran
    assert {"envelope-boundary_burst", "envelope-page_load_burst", "boundary-boundary_burst"} <= _charts_on_disk(sim_folder)
    md = (sim_folder / REPORT_MD).read_text()
    assert all(f"charts/{name}.png" in md for name in _charts_on_disk(sim_folder))
    rows = json.loads((sim_folder / SUMMARY_JSON).read_text())["runs"]
    assert len(rows) == 6
    row = next(r for r in rows if r["scenario"] == "boundary_burst" and r["algorithm"] == "fixed_window")
    assert row["over_admission"] == pytest.approx(2.0, abs=0.1)
    assert row["latency_p99_intended_ms"] > 0 and row["cpu_target_ms_per_1k"] > 0 and row["kind"] == "virtual"
    assert "wall_s" in row  # the simulator's own figure, from the run's run.json
    header = (sim_folder / SUMMARY_CSV).read_text().splitlines()[0].split(",")
    assert {"header_truthfulness", "legit_fairness_jain", "goodput_rps", "time_to_recover_s"} <= set(header)


def test_a_scenario_the_campaign_lacks_has_no_section_and_no_warning(sim_report, sim_folder: Path) -> None:
    for text in ((sim_folder / REPORT_HTML).read_text(), (sim_folder / REPORT_MD).read_text()):
        assert "Warnings" not in text and "skipped" not in text
        assert "retry_storm" not in text.lower().replace(" ", "_") and "unhealthy_downstream" not in text
        assert "latency_over_time" not in text  # no unhealthy_downstream run: no latency-over-time chart
        assert "ramp_" not in text and "offered" not in text  # no ramp run: no chart, no answer, no column
    html = (sim_folder / REPORT_HTML).read_text()
    assert html.index('<section id="answers">') < html.index('<details id="details">') < html.index('<details id="full-tables">')


def test_live_folder_gets_every_chart(live_report, live_folder: Path) -> None:
    assert _specs_on_disk(live_folder) == {s.name for s in SPECS} - LOGGED_LIMIT_ONLY
    assert {c.name for c in live_report.charts} == _charts_on_disk(live_folder)
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


@pytest.mark.parametrize("folder", ["live", "wide"])
@pytest.mark.process
def test_report_fits_1000_px_in_headless_chromium(folder: str, live_report, live_folder: Path, wide_report,
                                                  wide_folder: Path, tmp_path: Path) -> None:
    """No sideways scrolling, no chart shown under 60% of its drawn width, tables sort by a click."""
    root, report = (live_folder, live_report) if folder == "live" else (wide_folder, wide_report)
    fits_the_page(root / REPORT_HTML, len(report.charts), tmp_path)


def test_the_page_links_its_charts_as_files_and_says_what_the_markdown_says(sim_report, sim_folder: Path) -> None:
    """Nothing inlined: every chart is a file under charts/ that the page links, each drawn chart
    once; report.md opens every section of the same structure, answers first."""
    report = sim_report
    html = (sim_folder / REPORT_HTML).read_text()
    assert "base64" not in html and "data:" not in html
    linked = set(re.findall(r'(?:src|href)="(charts/[^"]+)"', html))
    assert linked and all((sim_folder / path).is_file() for path in linked)
    assert {f"{CHARTS_DIR}/{c.name}.png" for c in report.charts} <= linked
    assert len(re.findall(r'<img class="(?:chart|thumb)"', html)) == len(report.charts)  # each chart shown once
    doc = document(report)
    md = (sim_folder / REPORT_MD).read_text()
    assert md.index("## Answers") < md.index(f"## {doc.sections[0].title}")
    for section in doc.sections:
        assert f"## {section.title}\n" in md and f'<details id="{section.id}">' in html
    assert all(a.sentence in md for a in doc.answers)


@pytest.mark.process
def test_the_first_screen_holds_the_window_edge_answer_with_every_figure(wide_report, wide_folder: Path,
                                                                        tmp_path: Path) -> None:
    """At 1,000 x 800 px: the window-edge answer, naming every limiter with its figure against its
    own bound, and the first three answers' charts, loaded; and no answer on the page, as Chromium
    renders it, contradicts the rows of the report's tables."""
    report = wide_report
    seen = first_screen(wide_folder / REPORT_HTML, tmp_path)
    edge = seen["answers"][0]
    assert edge["key"] == "over_admission" and edge["sentence"].startswith("At the window edge on boundary_burst")
    assert edge["bottom"] <= SCREEN_HEIGHT
    thumbs = seen["thumbs"][:FIRST_SCREEN_CHARTS]
    assert len(thumbs) == FIRST_SCREEN_CHARTS and all(t["loaded"] and t["bottom"] <= SCREEN_HEIGHT for t in thumbs)
    rendered = [Answer(a["key"], "", a["sentence"], tuple(a["runs"].split()), None) for a in seen["answers"]]
    assert [a.key for a in rendered] == [a.key for a in report.answers()]
    assert contradictions(rendered, report.groups) == []
