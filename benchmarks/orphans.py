"""``run_bench.py bench orphans``: a live ``run`` SIGKILLed at random moments, and how soon after
each kill nothing it started is left (#41's goal: no process of the suite and no listening port
2 s after the kill, every time).

The campaign is the smallest that starts every kind of child the runner has: a node of two target
processes on the runner's own redis-server, two Locust workers under their master, an nginx peer
(``CAMPAIGN``; tests/harness/live/test_orphans.py kills the same campaign at five moments). Each
moment is drawn from a seeded RNG, one in each ``--moments``-th of the span from the runner's
imports to its last run; after the kill, what is left (``harness.processes.leftovers``: every
descendant recorded just before the kill, any process naming the results folder, every port the
tree listened on) is read every 20 ms until nothing is (a read takes 10-60 ms itself: the
resolution). Printed per kill and as the slowest against the goal.
"""

from __future__ import annotations

import random
import sys
import tempfile
from pathlib import Path

import yaml
from rich.console import Console
from rich.table import Table

from benchmarks.args import ROUNDS, bench_parser
from harness.processes.leftovers import Killed, kill_and_watch
from targets.cli_args import number

ROOT = Path(__file__).resolve().parents[1]
CAMPAIGN = {
    "name": "orphans", "seed": 1, "policy": {"limit": 20, "window_s": 1}, "algorithms": ["fixed_window"],
    "stores": ["redis-shared"], "processes": 2, "peers": ["nginx"],
    "scenarios": [{"name": "boundary_burst", "params": {"instant": 1, "boundaries": 1, "delta_s": 0.3}}],
    "scale": {"workers": 2, "lead_s": 2.0, "drain_s": 1.0},
    "downstream": {"concurrency": 8, "median_ms": 10, "sigma": 0.3},
}
SPAN_S = (0.5, 14.0)
"""When the kills land, in seconds after the start: from the runner's imports to its last run."""
GOAL_S = 2.0
WATCH_S = 30.0
"""How long a kill is watched before what is left is reported as left."""


def moments(count: int, seed: int) -> list[float]:
    """One moment in each ``count``-th of the span, drawn from a seeded RNG: spread over the run."""
    rng, width = random.Random(seed), (SPAN_S[1] - SPAN_S[0]) / count
    return [round(SPAN_S[0] + (i + rng.random()) * width, 2) for i in range(count)]


def killed_at(at_s: float, folder: Path, within_s: float) -> Killed:
    """``CAMPAIGN`` run into ``folder``, SIGKILLed ``at_s`` seconds after it started, watched ``within_s``."""
    path, out = folder / "orphans.yaml", folder / "res"
    path.write_text(yaml.safe_dump(CAMPAIGN))
    return kill_and_watch([sys.executable, "run_bench.py", "run", str(path), "--out", str(out)], ROOT, at_s,
                          str(folder), within_s)


def main(argv: list[str]) -> int:
    ap = bench_parser("orphans", __doc__)
    ap.add_argument("--moments", type=number(int, ROUNDS), default=20, help="kills, one run each (default 20)")
    ap.add_argument("--seed", type=number(int, ROUNDS), default=41, help="the moments' RNG seed (default 41)")
    args = ap.parse_args(argv)
    kills = []
    for at_s in moments(args.moments, args.seed):
        with tempfile.TemporaryDirectory(prefix="bench-orphans-") as folder:
            kills.append(killed_at(at_s, Path(folder), WATCH_S))
    Console().print(table(kills))
    return 0


def table(kills: list[Killed]) -> Table:
    """Each kill, then the slowest against the goal."""
    out = Table(title=f"SIGKILL of `run` at {len(kills)} moments: seconds until nothing it started is left",
                title_justify="left")
    for name in ("killed at", "children", "ports", "nothing left after", "left"):
        out.add_column(name, justify="left" if name == "left" else "right")
    for k in kills:
        gone = "-" if k.gone_after_s is None else f"{k.gone_after_s:.2f} s"
        out.add_row(f"{k.at_s:.2f} s", str(k.children), str(k.ports), gone, "; ".join(k.left[:3]) or "-")
    gone = [k.gone_after_s for k in kills]
    slowest = None if None in gone else max(g for g in gone if g is not None)
    verdict = "met" if slowest is not None and slowest <= GOAL_S else "NOT met"
    out.caption = (f"slowest: {'something left after ' + str(WATCH_S) + ' s' if slowest is None else f'{slowest:.2f} s'}"
                   f" (goal {GOAL_S:g} s, every time): {verdict}")
    return out
