"""The live panel `run` draws on a terminal, captured from a real run as text (the README's
picture of it): runs a campaign's runs as `run` does and prints the panel as it stood ``--at``
seconds into the plan of the last run chosen.

    .venv/bin/python tools/live_view.py campaigns/smoke.yaml --only page_load_burst --at 2.5
    .venv/bin/python tools/live_view.py campaigns/throughput.yaml --only token_bucket --at 25 --png docs/img/live_view.png

``--png``: the panel in the terminal's colours, as rich exports it (SVG), shot by headless Chromium.
"""

from __future__ import annotations

import argparse
import io
import math
import re
import shutil
import subprocess
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
    p.add_argument("--png", type=Path, help="also a picture of the panel (headless Chromium)")
    args = p.parse_args()
    campaign = load_campaign(args.campaign)
    runs = plan_runs(campaign, args.only)
    progress = RunProgress(Console(file=io.StringIO(), width=args.width))  # not a terminal: its lines discarded
    drawn: list[str] = []

    def heard(figures: dict[str, Any]) -> None:
        progress.loaded(figures)
        if progress.i == len(runs) and figures.get("elapsed_s", 0.0) >= args.at and figures.get("requests") and not drawn:
            out = Console(file=io.StringIO(), width=args.width, force_terminal=True, color_system="truecolor", record=True)
            out.print(progress.panel())
            drawn.append(out.export_text(clear=False))
            drawn.append(out.export_svg(title="run_bench.py run"))

    events = progress.events
    with tempfile.TemporaryDirectory() as out:
        LiveRunner(campaign, Path(out) / "res", events=RunnerEvents(
            run_start=events.run_start, counters=progress.counters, load=heard, run_done=events.run_done)).run_all(runs)
    if not drawn:
        raise SystemExit(f"the last run's plan never reached {args.at:g} s with Locust's figures")
    print(drawn[0], end="")
    if args.png:
        shot(drawn[1], args.png)


def shot(svg: str, png: Path) -> None:
    """``svg`` (rich's export, its size in its viewBox) as a PNG of that size, by headless Chromium."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("error: chromium is not installed (apt-get install -y chromium)")
    width, height = (math.ceil(float(v)) for v in re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg).groups())
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "panel.svg"
        page.write_text(svg)
        subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        "--disable-background-networking", f"--user-data-dir={tmp}", f"--window-size={width},{height}",
                        "--hide-scrollbars", f"--screenshot={png.resolve()}", page.as_uri()],
                       capture_output=True, timeout=120, check=True)


if __name__ == "__main__":
    main()
