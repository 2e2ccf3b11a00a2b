"""What a new user sees first in the terminal: summary tables that fit 100 columns with every
name whole, the wide layout when piped or asked for, one progress line per live run."""

from __future__ import annotations

import io
from types import SimpleNamespace

import pytest
from rich.console import Console
from rich.text import Text

from analysis.header_truth import Answer
from harness.cli import main as cli
from harness.cli import summary, term_table
from harness.cli.judge_progress import JudgeProgress
from harness.cli.progress import RunProgress
from harness.cli.sim_progress import SimProgress
from harness.judge.endpoint import Sent
from scenarios import SCENARIOS
from targets.algorithms import ALGORITHMS

SCENARIO_NAMES = [*SCENARIOS, "retry_storm-outage-full_jitter"]


def sim_rows() -> list[dict]:
    return [{"scenario": s, "algorithm": a, "store": "memory", "requests": 1_234_567, "admitted": 600_000,
             "rejected": 634_567, "rejected_legit": 12_345, "legit_requests": 1_000_000, "over_admission": 1.94,
             "false_admits": 277, "false_rejects": 3} for s in SCENARIO_NAMES for a in ALGORITHMS]


def live_rows() -> list[dict]:
    return [{"scenario": s, "algorithm": a, "store": st, "requests": 12_601, "rejected": 1_176, "rejected_legit": 176,
             "over_admission": 1.69, "latency_p99_intended_ms": 1_061.68, "cpu_target_ms_per_1k": 512.3,
             "generator_bound": a == "none"}
            for s in ("boundary_burst", "unhealthy_downstream") for a in ALGORITHMS for st in ("memory", "redis-shared")]


def live_table(rows: list[dict], out: Console, wide: bool = False):
    """The summary's table of `run` and `report` (the columns it left out are tested in test_terminal_summary.py)."""
    return summary.summary_table(rows, out, wide)[0]


def render(table_of, rows: list[dict], width: int, wide: bool = False) -> str:
    console = Console(width=width, record=True, file=io.StringIO())
    console.print(table_of(rows, console, wide))
    return console.export_text()


@pytest.mark.parametrize("table_of", [cli.summary_table, live_table])
@pytest.mark.parametrize("width", [100, 120])
def test_every_name_whole_at_100_columns(table_of, width):
    rows = sim_rows() if table_of is cli.summary_table else live_rows()
    text = render(table_of, rows, width)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= width
    assert "…" not in text
    words = {w for line in lines for w in line.split()}
    for row in rows:
        assert row["scenario"] in words and row["algorithm"] in words
    if table_of is live_table:
        assert {"memory", "redis-shared"} <= {w.strip("·") for w in words}
        assert "1,061.68" in words and "512.30" in words  # values whole too


@pytest.mark.parametrize("table_of", [cli.summary_table, live_table])
def test_wide_layout_when_it_fits_or_is_asked_for(table_of):
    rows = sim_rows()[:3] if table_of is cli.summary_table else live_rows()[:3]
    header = "over-admission" if table_of is cli.summary_table else "target CPU ms/1k"
    for width, wide in ((term_table.WIDE, False), (term_table.WIDE, True)):
        text = render(table_of, rows, width, wide)
        assert header in text and "scenario / algorithm" not in text
    every = sim_rows() if table_of is cli.summary_table else live_rows()
    assert "┃ scenario" not in render(table_of, every, 100)  # too wide for 100: the narrow layout


def test_the_fields_kept_come_after_the_limits_columns_and_only_when_some_answer_had_fields():
    """A url peer's row, its twin beside it: the promises kept, before latency and CPU (a narrow
    terminal crops the last columns); without a field anywhere, no such column."""
    live = {"scenario": "adversarial_drip", "store": "external", "requests": 42, "rejected": 2, "over_admission": 1.0,
            "latency_p99_intended_ms": 11.2}
    rows = [{**live, "algorithm": "gw", "limit_fields_form": "ietf-list", "retry_after_kept": 1, "retry_after_checked": 1,
             "remaining_kept": 27, "remaining_checked": 27, "reset_kept": 0, "reset_checked": 0},
            {**live, "algorithm": "gw twin: fixed_window", "requests": 62, "over_admission": 2.0}]
    text = render(live_table, rows, 250, wide=True)
    assert "fields kept" in text
    gw = next(line for line in text.splitlines() if "│ gw " in line)
    cells = [c.strip() for c in gw.split("│")]
    assert cells.index("1/1 27/27 -") == cells.index("1.00") + 1  # after over-adm. (no in-flight figure: no column)
    assert cells.index("1/1 27/27 -") < cells.index("11.20")
    assert "fields kept" not in render(live_table, live_rows(), term_table.WIDE, wide=True)


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_piped_or_wide_console_is_wide_and_a_terminal_one_follows_its_width(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setattr("sys.stdout", io.StringIO())
    assert term_table.console().width == term_table.WIDE
    monkeypatch.setattr("sys.stdout", Tty())
    assert term_table.console().width == 100
    assert term_table.console(wide=True).width == term_table.WIDE


def counters(decided: int, rejected: int = 0) -> dict:
    return {"limits": {"api": {"decisions": decided, "rejections": rejected}}}


def test_progress_piped_is_one_line_per_run():
    out = io.StringIO()
    console = Console(file=out, width=160)
    with RunProgress(console) as progress:
        for i, status in enumerate(("ok", "failed"), 1):
            progress.start(i, 2, f"boundary_burst__gcra__memory{i}")
            for _ in range(50):  # the runner polls twice a second, also before the plan starts
                progress.counters(counters(0))
            progress.counters(counters(100, 50))
            progress.done({"status": status, "sent": 100 + i, "error": "target did not start\nlog tail"})
    lines = out.getvalue().splitlines()
    assert lines == ["run 1/2 boundary_burst__gcra__memory1  ok  101 sent, 100 decided, 50 rejected, 0.0 s",
                     "run 2/2 boundary_burst__gcra__memory2  failed after 0.0 s: target did not start"]
    with RunProgress(console) as progress:
        progress.start(1, 1, "steady__gcra__memory")
        progress.counters(counters(100, 5))
        progress.done({"status": "ok", "sent": 100})
    assert out.getvalue().splitlines()[-1] == "run 1/1 steady__gcra__memory  ok  100 sent, 5 rejected, 0.0 s"


def shown(progress: RunProgress) -> list[str]:
    """The live panel as the terminal draws it now, line by line."""
    console = Console(file=io.StringIO(), width=progress.out.width, color_system=None)
    console.print(progress.panel())
    return console.file.getvalue().splitlines()


def test_the_live_panel_follows_the_run_within_the_terminal():
    console = Console(file=io.StringIO(), force_terminal=True, width=80)
    with RunProgress(console) as progress:
        progress.start(1, 30, "page_load_burst__sliding_window_counter__memory")
        assert progress.live is not None
        assert shown(progress)[0].startswith("╭─ run 1/30 page_load_burst__sliding_window_counter__memory ─")
        assert shown(progress)[1].rstrip("│ ").endswith(" s, starting") and "nothing decided yet" in shown(progress)[2]
        progress.counters(counters(0))
        assert "waiting to start" in shown(progress)[1]
        progress.counters(counters(40, 4))
        assert "40 decided: 36 admitted, 4 refused (10.0%)" in "".join(shown(progress))
        progress.done({"status": "ok", "sent": 40})
        progress.start(2, 30, "unhealthy_downstream-some-long-label__sliding_window_counter__redis-local-split")
        progress.counters(counters(40_000, 4_000))
        progress.loaded({**LOAD, "late_groups": 12.0})
        lines = shown(progress)
        assert all(len(line) <= 80 for line in lines)  # cut and folded inside the terminal, never past it
        assert "1 of 30 runs done" in lines[-2]


def test_the_panel_heard_through_the_runner_events_goes_after_the_last_run():
    """The runners speak RunnerEvents: each run's start, the counters and its end reach the same
    display, and the panel goes with the last run (the analysis that follows is no run)."""
    out = io.StringIO()
    with RunProgress(Console(file=out, force_terminal=True, width=120)) as progress:
        events, runs = progress.events, [SimpleNamespace(name=f"steady__gcra__memory{i}") for i in (1, 2)]
        assert events.wants_counters
        for i, run in enumerate(runs, 1):
            events.started(i, 2, run)
            events.counted(counters(100, 5))
            assert progress.live is not None and f"run {i}/2 steady__gcra__memory{i}" in shown(progress)[0]
            events.done(i, 2, run, {"status": "ok", "sent": 100})
        assert progress.live is None
    shown_text = Text.from_ansi(out.getvalue()).plain
    assert "run 1/2 steady__gcra__memory1  ok  100 sent, 5 rejected" in shown_text
    assert "run 2/2 steady__gcra__memory2  ok  100 sent, 5 rejected" in shown_text


LOAD = {"elapsed_s": 12.0, "remaining_s": 21.4, "offered_rps": 8_100.0, "achieved_rps": 8_050.0, "requests": 90_000.0,
        "failures": 3.0, "p50_ms": 12.0, "p99_ms": 48.0}


def test_the_live_panel_shows_both_sides_and_the_campaign(monkeypatch):
    now = [100.0]
    monkeypatch.setattr("harness.cli.progress.time.monotonic", lambda: now[0])
    console = Console(file=io.StringIO(), force_terminal=True, width=200)
    with RunProgress(console) as progress:
        progress.done({"status": "ok", "sent": 10})  # a first run finished
        progress.start(2, 5, "ramp__token_bucket__memory")
        progress.counters(counters(15_000, 5_000))
        now[0] = 101.0
        progress.counters(counters(40_000, 25_000))
        progress.loaded({**LOAD, "late_groups": 12.0})
        now[0] = 230.0
        *rows, campaign = [line.strip("│ ") for line in shown(progress)[1:-1]]
        assert rows == [
            "time      12.0 s in, 21 s left",
            "rate      offered 8,100/s, answered 8,050/s (Locust's, seconds behind)",
            "target    40,000 decided: 15,000 admitted, 25,000 refused (62.5%); deciding 25,000/s",
            "client    90,000 answers, 3 failed, 12 late sends (groups > 5 ms past their time)",
            "latency   P50 12 ms, P99 48 ms (last seconds, from the send)"]
        assert campaign.startswith("campaign  ━━━━╸ ") and campaign.endswith(" 1 of 5 runs done, 2 min 10 s in all")


def test_piped_the_live_view_is_a_plain_line_every_ten_seconds(monkeypatch):
    out = io.StringIO()
    now = [0.0]
    monkeypatch.setattr("harness.cli.progress.time.monotonic", lambda: now[0])
    with RunProgress(Console(file=out, width=200)) as progress:
        progress.start(1, 1, "ramp__token_bucket__memory")
        now[0] = 5.0
        progress.loaded({"elapsed_s": 5.0, "remaining_s": 28.0, "offered_rps": 2_000.0})  # 5 s in: nothing yet
        now[0] = 10.5
        progress.counters(counters(90_000, 60_000))
        progress.loaded(LOAD)
        now[0] = 12.0
        progress.loaded(LOAD)  # 1.5 s after the last line: none
        now[0] = 20.5
        progress.loaded({**LOAD, "late_groups": 7.0})  # once the master has its workers' late sends
        progress.counters(counters(240_000, 160_000))
        progress.done({"status": "ok", "sent": 240_000})
    assert out.getvalue().splitlines() == [
        "run 1/1 ramp__token_bucket__memory  10 s  90,000 decided, 60,000 rejected  offered 8,100/s, answered 8,050/s "
        "(Locust's, seconds behind); 90,000 answers so far, 3 failed; P50 12 / P99 48 ms (last seconds, from the send); 21 s left",
        "run 1/1 ramp__token_bucket__memory  20 s  90,000 decided, 60,000 rejected  offered 8,100/s, answered 8,050/s "
        "(Locust's, seconds behind); 90,000 answers so far, 3 failed, 7 late sends; P50 12 / P99 48 ms (last seconds, from "
        "the send); 21 s left",
        "run 1/1 ramp__token_bucket__memory  ok  240,000 sent, 160,000 rejected, 20.5 s"]


def test_judge_shows_its_phase_and_its_requests_against_the_caps_on_a_terminal_only(monkeypatch):
    now = [50.0]
    monkeypatch.setattr("harness.cli.judge_progress.time.monotonic", lambda: now[0])
    url = "http://127.0.0.1:8080/api/items"
    with JudgeProgress(Console(file=io.StringIO(), force_terminal=True, width=200), url, 2_000, 180) as progress:
        assert progress.live is not None
        for i, (role, status) in enumerate([("key", 200), ("key", 429), ("learn", 200), ("hunt-first-edge", 429)]):
            progress.heard(Sent(Answer("k", i, i + 0.01, status), role, "127.0.0.1"))
        now[0] = 62.4
        assert progress.line().plain == (f"judging {url}  hunting the worst case  4 of at most 2,000 requests (2 admitted, 2 "
                                         "refused)  12 s of at most 180 s")
        progress.heard(Sent(Answer("k", 5, 5.01, 200), "check-steady", "127.0.0.1"))
        assert "checking its prediction on traffic it did not fit" in progress.line().plain
    assert progress.live is None
    narrow = JudgeProgress(Console(file=io.StringIO(), force_terminal=True, width=60), url, 2_000, 180)
    assert len(narrow.cut_line().plain) == 59  # one line, cut
    with JudgeProgress(Console(file=io.StringIO(), width=200), url, 2_000, 180) as piped:
        assert piped.live is None  # piped: the verdict is the output


def test_simulate_shows_the_run_it_simulates_on_a_terminal_only(monkeypatch):
    now = [10.0]
    monkeypatch.setattr("harness.cli.sim_progress.time.monotonic", lambda: now[0])
    run = SimpleNamespace(scenario="steady", algorithm="token_bucket",
                          model=SimpleNamespace(expected_requests=lambda: 1_000_000.0))
    with SimProgress(Console(file=io.StringIO(), force_terminal=True, width=120)) as simulating:
        assert simulating.live is not None and simulating.line().plain == ""
        simulating.started(2, 3, run)
        now[0] = 14.25
        assert simulating.line().plain == "run 2/3 steady x token_bucket: simulating about 1,000,000 requests, 4.2 s"
    assert simulating.live is None
    with SimProgress(Console(file=io.StringIO(), width=120)) as piped:
        assert piped.live is None


def test_the_simulate_table_gives_legitimate_rejections_as_a_share():
    rows = [{**sim_rows()[0], "rejected_legit": 937_500, "legit_requests": 1_650_000},
            {**sim_rows()[1], "rejected_legit": 0, "legit_requests": 0}]
    text = render(cli.summary_table, rows, 200, wide=True)
    assert "56.8%" in text and "937,500/1,650,000" not in text and "0/0" not in text

