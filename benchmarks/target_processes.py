"""``run_bench.py bench target-processes``: decisions/s of one target node served by 1 process
and by N (``--processes N``, SO_REUSEPORT), against the ``none`` target and limiting algorithms,
in one run (wrk as the load generator).

Each node gets the never-rejecting policy of ``bench targets`` (admitted work is measured, not
cheap 429s) and its decision log on. wrk runs on the same machine: on 2 cores, wrk's own thread
takes much of one, so a second target process can only use what is left of the other; the ratio
printed is what N processes buy *here*, not the node's ceiling on a machine of its own. Rounds
are interleaved (1 process, N processes, per target, round after round) and the N/1 ratio is the
median of per-round ratios, so drift in the machine's load cancels out of it. CPU is the whole
node's (every process, psutil) per request.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import psutil

from benchmarks.args import bench_parser
from harness.processes.target import running_target
from targets.algorithms import ALGORITHMS

from .targets import NEVER_REJECT, wrk


@dataclass
class Sample:
    rps: float
    p99_ms: float
    cpu_us: float
    """The node's CPU time (every process, user + system) per request."""


def node_cpu_s(pid: int) -> float:
    total = 0.0
    for proc in [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]:
        times = proc.cpu_times()
        total += times.user + times.system
    return total


def measure(pid: int, url: str, args: argparse.Namespace) -> Sample:
    wrk(url, args.warmup, args.connections, args.threads)
    before = node_cpu_s(pid)
    requests, rps, p99 = wrk(url, args.seconds, args.connections, args.threads)
    return Sample(rps, p99, (node_cpu_s(pid) - before) / max(1, requests) * 1e6)


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser("target-processes", __doc__.split("\n\n")[0])
    parser.add_argument("--algorithm", action="append", default=[], help="repeatable; default: fixed_window "
                                                                          "(none is always measured)")
    parser.add_argument("--processes", type=int, default=2, help="processes of the multi-process node (default 2)")
    parser.add_argument("--seconds", type=int, default=6, help="measured seconds per node per round")
    parser.add_argument("--warmup", type=int, default=2, help="unmeasured seconds before each measurement")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=64, help="wrk connections (spread over the processes by the kernel)")
    parser.add_argument("--threads", type=int, default=1, help="wrk threads")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))  # unwinds: targets stopped
    if shutil.which("wrk") is None:
        print("error: wrk is not installed (apt-get install -y wrk); this benchmark needs it", file=sys.stderr)
        return 2
    names = ["none", *[a for a in (args.algorithm or ["fixed_window"]) if a != "none"]]
    unknown = [a for a in names if a not in ALGORITHMS]
    if unknown or not 2 <= args.processes <= 64:
        print(f"error: unknown algorithm(s) {', '.join(unknown)}" if unknown else
              f"error: --processes: must be 2..64, got {args.processes}", file=sys.stderr)
        return 2
    counts = (1, args.processes)
    results: dict[tuple[str, int], list[Sample]] = {(name, n): [] for name in names for n in counts}
    with tempfile.TemporaryDirectory(prefix="processes-bench-") as tmp:
        for r in range(args.rounds):
            for name, n in results:
                log = Path(tmp) / f"{name}-{n}-{r}.parquet"
                argv_ = ["--algorithm", name, *NEVER_REJECT, "--processes", str(n), "--decision-log", str(log)]
                with running_target(argv_, log_dir=Path(tmp)) as target:
                    s = measure(target.pid, f"{target.url}/api/items", args)
                results[name, n].append(s)
                print(f"round {r + 1}/{args.rounds} {name:24s} x{n} {s.rps:7.0f} req/s  P99 {s.p99_ms:7.2f} ms  "
                      f"{s.cpu_us:6.1f} us CPU/request", file=sys.stderr)
    report(results, names, counts, args)
    return 0


def report(results: dict[tuple[str, int], list[Sample]], names: list[str], counts: tuple[int, int],
           args: argparse.Namespace) -> None:
    one, many = counts

    def med(name: str, n: int, attr: str) -> float:
        return statistics.median(getattr(s, attr) for s in results[name, n])

    print(f"\nGET /api/items, memory store, never rejecting, decision log on; wrk -t{args.threads} -c{args.connections}, "
          f"{args.seconds} s x {args.rounds} rounds (medians); {os.cpu_count()} cores shared by wrk, the node and anything "
          "else running")
    print(f"{'target':24s} {'1 proc req/s':>12s} {f'{many} procs req/s':>14s} {f'{many}/1':>6s} "
          f"{'P99 ms 1 | ' + str(many):>15s} {'CPU us/req 1 | ' + str(many):>19s}")
    for name in names:
        ratio = statistics.median(m.rps / o.rps for o, m in zip(results[name, one], results[name, many]))
        print(f"{name:24s} {med(name, one, 'rps'):12.0f} {med(name, many, 'rps'):14.0f} {ratio:6.2f} "
              f"{med(name, one, 'p99_ms'):7.2f} | {med(name, many, 'p99_ms'):5.2f} "
              f"{med(name, one, 'cpu_us'):10.1f} | {med(name, many, 'cpu_us'):6.1f}")
    print(f"\n{many}/1: the median of per-round ratios of requests/s. On the memory store each of the {many} processes "
          f"is a limiter of its own (the node admits up to {many} x L); wrk competes for the same cores.")


if __name__ == "__main__":
    raise SystemExit(main())
