"""``run_bench.py bench traffic``: access logs in, refusals out, at scale.

1. Parse rate per format: the same requests written in every format the readers take, each read
   in full (repeated, interleaved, median), lines/s beside the 250,000 lines/s goal for
   ``combined``; ``combined`` is read twice, by the CSV reader the suite uses and by the compiled
   regex it would use otherwise, so the choice is shown measured.
2. Scale: a generated ``combined`` log of 5,000,000 lines (``--lines``: 80,000,000 is a 10 GB log)
   judged against 3 policies in one command: wall time (read + every replay) and the memory of
   the whole process tree (this process and its replay workers) beside the goals (< 60 s for
   5,000,000 lines and the same rate for more; < 1 GiB whatever the size). ``combined`` logs whole
   seconds, so every policy is replayed twice (both bounds). The tree's memory is its peak PSS,
   sampled: each page counted once, shared pages divided among the processes that share them
   (forked workers share their parent's pages), beside every process's own peak
   RSS from the kernel and their sum (shared pages counted in every process: an upper bound).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import statistics
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import psutil
from rich.console import Console
from rich.table import Table

from benchmarks.args import LOG_LINES, REQUESTS, ROUNDS, bench_parser, check_log_disk
from harness.campaign.log_traffic import load_traffic
from harness.campaign.policy_file import parse_policy
from harness.validate.traffic import judge
from scenarios.access_log import open_log
from scenarios.access_log.nginx import COMBINED, RegexReader
from scenarios.access_log.render import CUSTOM, JSON_FIELDS, PIPED, LoggedRequest, render
from targets.cli_args import number

PARSE_GOAL, WALL_GOAL_S, RSS_GOAL = 250_000, 60.0, 1 << 30
GOAL_LINES = 5_000_000
"""The wall-time goal is 60 s for 5,000,000 lines: a larger log is held to the same rate."""
T0 = 1_760_000_000
ROUTES = ["GET /api/items", "GET /api/search", "POST /api/reports", "POST /login", "GET /healthz"]
AGENTS = ["Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36", "curl/8.5.0", "Googlebot/2.1 (+http://www.google.com/bot.html)"]
POLICIES = [
    {"name": "per-ip-token-bucket", "routes": [{"name": r} for r in ROUTES[:4]],
     "limits": [{"name": "api", "key": "ip", "algorithm": "token_bucket", "limit": 600, "window_s": 60, "burst": 50}]},
    {"name": "per-ip-fixed-window", "routes": [{"name": r} for r in ROUTES[:4]],
     "limits": [{"name": "api", "key": "ip", "algorithm": "fixed_window", "limit": 300, "window_s": 60}]},
    {"name": "login-and-api", "routes": [{"name": r, "login": r == "POST /login"} for r in ROUTES[:4]],
     "limits": [{"name": "login", "key": "ip", "routes": ["POST /login"], "algorithm": "sliding_window_counter",
                 "limit": 5, "window_s": 60},
                {"name": "api", "key": "ip", "routes": ROUTES[:3], "algorithm": "gcra", "limit": 1200, "window_s": 60}]},
]


def generate_combined(path: Path, lines: int, rate: float, clients: int, seed: int = 1) -> None:
    """A combined log of ``lines`` requests at ``rate``/s from ``clients`` addresses (one in ten
    IPv6), Zipf-weighted so a few clients are heavy; written in blocks (flat memory)."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, clients + 1) ** 1.1
    weights /= weights.sum()
    addrs = np.array([f"2001:db8:{i:x}::{i % 7 + 1}" if i % 10 == 9 else f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}"
                      for i in range(clients)], dtype=object)
    stamps: dict[int, str] = {}
    t = float(T0)
    with path.open("w") as out:
        for first in range(0, lines, 100_000):
            n = min(100_000, lines - first)
            gaps = rng.exponential(1.0 / rate, n)
            times = (t + np.cumsum(gaps)).astype(np.int64)
            t += float(gaps.sum())
            who = addrs[rng.choice(clients, n, p=weights)]
            what = rng.choice(len(ROUTES), n, p=[0.6, 0.25, 0.05, 0.05, 0.05])
            agent = rng.choice(len(AGENTS), n, p=[0.8, 0.1, 0.1])
            rows = []
            for sec, a, r, g in zip(times.tolist(), who, what.tolist(), agent.tolist()):
                stamp = stamps.get(sec) or stamps.setdefault(sec, time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(sec)))
                rows.append(f'{a} - - [{stamp}] "{ROUTES[r]} HTTP/1.1" 200 512 "-" "{AGENTS[g]}"\n')
            out.write("".join(rows))


def _sample(n: int, seed: int = 2) -> list[LoggedRequest]:
    rng = np.random.default_rng(seed)
    t = T0 + np.cumsum(rng.exponential(0.002, n))
    out = []
    for i, (ti, c) in enumerate(zip(t.tolist(), rng.integers(0, 5000, n).tolist())):
        method, path = ROUTES[i % 4].split()
        out.append(LoggedRequest(ti, f"10.1.{c >> 8}.{c & 255}", method, path + "?page=2",
                                 xff=f"203.0.113.{c & 255}" if i % 3 == 0 else None,
                                 api_key=f"key-{c}" if i % 2 else None, agent=AGENTS[i % 3]))
    return out


READS = {
    "combined (CSV reader)": ("combined", lambda p: open_log(p, "combined")),
    "combined (regex)": ("combined", lambda p: RegexReader(p, COMBINED, "combined")),
    "main": ("main", lambda p: open_log(p, "main")),
    "custom ($msec, API key)": ("custom", lambda p: open_log(p, log_format=CUSTOM)),
    "piped (regex)": ("piped", lambda p: open_log(p, log_format=PIPED)),
    "json": ("json", lambda p: open_log(p, fields=[JSON_FIELDS])),
    "alb": ("alb", lambda p: open_log(p, "alb")),
    "cloudfront": ("cloudfront", lambda p: open_log(p, "cloudfront")),
}


def parse_rates(root: Path, n: int, repeat: int) -> dict[str, tuple[float, float]]:
    """(lines per wall second, lines per CPU second) per reader, interleaved rounds (every reader
    once per round), median. CPU seconds add up every thread's: on a loaded machine the second
    figure is what one idle core would give, at least."""
    sample = _sample(n)
    files = {fmt: root / f"sample.{fmt}.log" for fmt, _ in READS.values()}
    for fmt, path in files.items():
        path.write_text(render(sample, fmt))
    rates: dict[str, list[tuple[float, float]]] = {name: [] for name in READS}
    for _ in range(repeat):
        for name, (fmt, make) in READS.items():
            start, cpu = time.perf_counter(), time.process_time()
            reader = make(files[fmt])
            rows = sum(len(b) for b in reader.batches())
            rates[name].append((rows / (time.perf_counter() - start), rows / max(1e-9, time.process_time() - cpu)))
    return {name: (statistics.median(w for w, _ in r), statistics.median(c for _, c in r)) for name, r in rates.items()}


class TreePeak:
    """The peak PSS of this process and its children, summed at each sample (psutil reads
    each process's ``smaps_rollup``), in a thread while the block runs. A spike shorter than
    one interval can be missed: the kernel's per-process high-water marks are printed beside it."""

    def __init__(self, every_s: float = 0.05) -> None:
        self.every_s, self.pss = every_s, 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        me = psutil.Process()
        while not self._done.is_set():
            total = 0
            for proc in [me, *me.children(recursive=True)]:
                with contextlib.suppress(psutil.Error):  # a worker that ended between the listing and the read
                    total += proc.memory_full_info().pss
            self.pss = max(self.pss, total)
            self._done.wait(self.every_s)

    def __enter__(self) -> TreePeak:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._done.set()
        self._thread.join()


@dataclass(frozen=True)
class Scale:
    """The scale run's figures: seconds, bytes and the outcomes."""

    generated_s: float
    wall_s: float
    cpu_s: float
    tree_pss: int
    own_rss: int
    """This process's peak RSS (the kernel's high-water mark)."""
    worker_rss: int
    """The largest replay worker's peak RSS."""
    outcomes: list


def scale(root: Path, lines: int) -> Scale:
    """The figures of judging ``lines`` generated combined lines against the 3 policies. The
    CPU time adds the workers': the wall time on an idle machine would be about it over the cores."""
    path = root / "big.combined.log"
    start = time.perf_counter()
    generate_combined(path, lines, rate=lines / 86_400 * 4, clients=20_000)
    generated = time.perf_counter() - start
    with TreePeak() as peak:
        start, cpu = time.perf_counter(), _cpu()
        traffic = load_traffic(path)
        outcomes = judge(traffic, [parse_policy(p, p["name"]) for p in POLICIES])
        wall, cpu = time.perf_counter() - start, _cpu() - cpu
    return Scale(generated, wall, cpu, peak.pss, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                 resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024, outcomes)


def _cpu() -> float:
    """CPU seconds of this process and its finished children (the replay workers)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main(argv: list[str]) -> int:
    ap = bench_parser("traffic", __doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=number(int, LOG_LINES), default=5_000_000,
                    help="lines of the generated combined log (default 5,000,000; 80,000,000 is a 10 GB log)")
    ap.add_argument("--sample", type=number(int, REQUESTS), default=200_000, help="lines per format for the parse rates (default 200,000)")
    ap.add_argument("--repeat", type=number(int, ROUNDS), default=3, help="interleaved rounds of the parse rates (median)")
    args = ap.parse_args(argv)
    check_log_disk(ap, args.lines)
    console = Console()
    with tempfile.TemporaryDirectory(prefix="bench-traffic-") as tmp:
        root = Path(tmp)
        big = scale(root, args.lines)  # first: the peak RSS is the scale run's
        rates = parse_rates(root, args.sample, args.repeat)
    table = Table(title=f"parse rate, {args.sample:,} lines per format, median of {args.repeat} interleaved rounds",
                  title_justify="left")
    for col in ("reader", "lines/s (wall)", "lines per CPU s", "goal (wall)"):
        table.add_column(col, justify="left" if col == "reader" else "right")
    for name, (rate, per_cpu) in rates.items():
        goal = f"{PARSE_GOAL:,} {'met' if rate >= PARSE_GOAL else 'MISSED'}" if name.startswith("combined (CSV") else ""
        table.add_row(name, f"{rate:,.0f}", f"{per_cpu:,.0f}", goal)
    console.print(table)
    console.print(f"combined: the CSV reader reads {rates['combined (CSV reader)'][0] / rates['combined (regex)'][0]:.1f}x "
                  f"the compiled regex's lines/s (same file, same run); load average {os.getloadavg()[0]:.1f} on "
                  f"{os.cpu_count()} cores", highlight=False)
    console.print(scale_table(big, args.lines))
    console.print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores: the wall times are a shared "
                  "machine's", highlight=False)
    for o in big.outcomes:
        console.print(f"  {o.policy} ({o.timing}): {o.refused:,} of {o.requests:,} refused, {o.keys_refused:,} of "
                      f"{o.keys:,} keys", highlight=False)
    return 0


def _met(value: float, goal: float) -> str:
    return "met" if value < goal else "MISSED"


def scale_table(big: Scale, lines: int) -> Table:
    """The scale run's figures beside their goals."""
    table = Table(title=f"{lines:,} combined lines x {len(POLICIES)} policies (both bounds each), one command",
                  title_justify="left")
    for col in ("figure", "measured", "goal", ""):
        table.add_column(col, justify="left" if col == "figure" else "right")
    goal_s = WALL_GOAL_S * max(1.0, lines / GOAL_LINES)
    table.add_row("read + judge wall time", f"{big.wall_s:.1f} s ({lines / big.wall_s:,.0f} lines/s)", f"< {goal_s:,.0f} s",
                  _met(big.wall_s, goal_s))
    cores = min(os.cpu_count() or 1, 2 * len(POLICIES))
    table.add_row("read + judge CPU time (with the workers')", f"{big.cpu_s:.1f} s", "", "")
    table.add_row(f"  / {cores} cores: the wall time on an idle machine, about", f"{big.cpu_s / cores:.1f} s",
                  f"< {goal_s:,.0f} s", _met(big.cpu_s / cores, goal_s))
    table.add_row("peak PSS of the process tree (sampled every 50 ms)", f"{big.tree_pss / 2**30:.2f} GiB",
                  f"< {RSS_GOAL / 2**30:.0f} GiB", _met(big.tree_pss, RSS_GOAL))
    table.add_row("peak RSS: this process; the largest worker (kernel high-water marks)",
                  f"{big.own_rss / 2**30:.2f}; {big.worker_rss / 2**30:.2f} GiB", "", "")
    bound = big.own_rss + big.worker_rss * cores
    table.add_row(f"  this process + {cores} x the largest worker (shared pages counted each time: at most)",
                  f"{bound / 2**30:.2f} GiB", f"< {RSS_GOAL / 2**30:.0f} GiB", _met(bound, RSS_GOAL))
    table.add_row("(generating the log, not counted)", f"{big.generated_s:.1f} s", "", "")
    return table
