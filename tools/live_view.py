"""The live panel `run` draws on a terminal, captured from a real run as text (the README's
picture of it): runs a campaign's runs as `run` does and prints the panel as it stood ``--at``
seconds into the plan of the last run chosen.

    .venv/bin/python tools/live_view.py campaigns/smoke.yaml --only page_load_burst --at 2.5
"""

from __future__ import annotations

import argparse
import io
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console

from harness.campaign.live import load_campaign
from harness.cli.progress import RunProgress
from harness.events import RunnerEvents
from harness.live.plan import plan_runs
from harness.live.runner import LiveRunner


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("campaign", type=Path)
    p.add_argument("--only", action="append", help="as run's --only (the last run chosen is drawn)")
    p.add_argument("--at", type=float, default=2.0, help="seconds into the plan")
    p.add_argument("--width", type=int, default=100)
    args = p.parse_args()
    campaign = load_campaign(args.campaign)
    runs = plan_runs(campaign, args.only)
    progress = RunProgress(Console(file=io.StringIO(), width=args.width))  # not a terminal: its lines discarded
    drawn: list[str] = []

    def heard(figures: dict[str, Any]) -> None:
        progress.loaded(figures)
        if progress.i == len(runs) and figures.get("elapsed_s", 0.0) >= args.at and figures.get("requests") and not drawn:
            out = Console(file=io.StringIO(), width=args.width, color_system=None)
            out.print(progress.panel())
            drawn.append(out.file.getvalue())

    events = progress.events
    with tempfile.TemporaryDirectory() as out:
        LiveRunner(campaign, Path(out) / "res", events=RunnerEvents(
            run_start=events.run_start, counters=progress.counters, load=heard, run_done=events.run_done)).run_all(runs)
    print(drawn[0] if drawn else f"the last run's plan never reached {args.at:g} s with Locust's figures", end="")


if __name__ == "__main__":
    main()
