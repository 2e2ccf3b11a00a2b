"""``python -m benchmarks.targets``: HTTP throughput, P99 and CPU cost of every target on the memory
store, against the ``none`` target, in one run (wrk as the load generator).

Each target is started with a policy it never rejects under the load (so admitted work is
measured, not cheap 429s), a downstream with no service time (so the stack is measured, not a
sleep), and its decision log on. wrk and the target share this machine's cores, so requests/s
also moves with whatever else runs; the target's own CPU time per request (psutil) does not,
and its ratio to ``none`` is the throughput ratio at equal CPU. Rounds are interleaved (none,
a, b, ..., none, a, b, ...) so drift hits every target alike; medians are reported. The first
limiter runs again with fewer quota headers on admitted responses (``draft``, ``none``): on this
stack the headers, not the decision, are most of what a limiter adds to a request. It runs twice
more refusing every request (one key, limit 1 per day): ``[refusing]`` as the target serves (the
refusal decided and answered by the HTTP protocol, before uvicorn's request cycle:
targets/early_refusal.py) and ``[refusing in the app]`` decided by the ASGI middleware
(``--decide-in app``, as before); a refusal's CPU over an admitted request's, paired by round
(goal: at most ``REFUSAL_GOAL``; the first article: the 429 itself must be cheap). ``none`` and the
first limiter run once more on stock uvicorn (``[stock uvicorn]``: ``--server stock``, the FastAPI
app as a user serves it), so the figures say what the tuned server buys over the stock one.

``--instructions`` adds what noise cannot move: each target's instructions per request, counted
by valgrind (``bench_instructions``), and their ratio to ``none``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil

from benchmarks.args import bench_parser
from harness.processes.target import running_target
from targets.__main__ import build_parser, overrides
from targets.algorithms import ALGORITHMS

from . import targets_instructions as bench_instructions
from .targets_asgi import in_process_us

GOAL = 0.90
REFUSAL_GOAL = 1 / 3
REFUSING = ["--limit", "1", "--window", "86400", "--service-ms", "0"]
IN_APP = "[refusing in the app]"
STOCK = "[stock uvicorn]"
"""The same app on uvicorn's own Server and protocol, the middleware deciding (``--server stock``)."""
"""Every request after the first is refused (wrk sends no key: one client address, one key)."""
NEVER_REJECT = ["--limit", "1e9", "--window", "1", "--service-ms", "0", "--concurrency", "100000"]
_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


@dataclass
class Sample:
    rps: float
    p99_ms: float
    cpu_us: float
    """Target CPU time (user + system) per request."""
    user_share: float
    """The user-space part of that CPU time (the rest is the kernel's TCP work)."""


def wrk(url: str, seconds: int, connections: int, threads: int, refusing: bool = False) -> tuple[int, float, float]:
    """(requests, requests/s, P99 latency in ms) from one wrk run."""
    out = subprocess.run(["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--latency", url],
                         capture_output=True, text=True, check=True).stdout
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if errors and not refusing:
        raise RuntimeError(f"{url}: {errors.group(1)} non-2xx responses; the benchmark policy must not reject")
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    value, unit = re.search(r"^\s+99%\s+([\d.]+)(us|ms|s)\s*$", out, re.M).groups()
    return requests, rps, float(value) * _UNITS[unit]


def measure(pid: int, url: str, args: argparse.Namespace, refusing: bool = False) -> Sample:
    wrk(url, args.warmup, args.connections, args.threads, refusing)
    process = psutil.Process(pid)
    before = process.cpu_times()
    requests, rps, p99 = wrk(url, args.seconds, args.connections, args.threads, refusing)
    after = process.cpu_times()
    user = after.user - before.user
    cpu = user + (after.system - before.system)
    return Sample(rps, p99, cpu / max(1, requests) * 1e6, user / cpu if cpu > 0 else 1.0)


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser("targets", __doc__.split("\n\n")[0])
    parser.add_argument("--algorithm", action="append", default=[], help="repeatable; default: all")
    parser.add_argument("--seconds", type=int, default=8, help="measured seconds per target per round")
    parser.add_argument("--warmup", type=int, default=2, help="unmeasured seconds before each measurement")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1, help="wrk threads")
    parser.add_argument("--admitted-headers", choices=["full", "draft", "none"], default="full",
                        help="quota headers on the limiters' admitted responses (see python -m targets --help)")
    parser.add_argument("--instructions", action="store_true",
                        help="also count each target's instructions per request under valgrind (adds ~10 minutes)")
    args = parser.parse_args(argv)
    # SIGTERM unwinds like Ctrl-C, so every running target is stopped on the way out
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    if shutil.which("wrk") is None:
        print("error: wrk is not installed (apt-get install -y wrk); this benchmark needs it", file=sys.stderr)
        return 2
    if args.instructions and not bench_instructions.available():
        print("error: --instructions needs valgrind (apt-get install -y valgrind)", file=sys.stderr)
        return 2
    names = ["none", *[a for a in (args.algorithm or ALGORITHMS) if a != "none"]]
    unknown = [a for a in names if a not in ALGORITHMS]
    if unknown:
        print(f"error: unknown algorithm(s) {', '.join(unknown)}", file=sys.stderr)
        return 2
    # each target: label -> its command line; the first limiter again with the other header
    # modes shows what the quota headers on admitted responses cost, apart from the decision
    argvs = {name: ["--algorithm", name, *NEVER_REJECT, "--admitted-headers", args.admitted_headers] for name in names}
    if len(names) > 1:
        for mode in ("full", "draft", "none"):
            if mode != args.admitted_headers:
                argvs[f"{names[1]} [{mode} headers]"] = ["--algorithm", names[1], *NEVER_REJECT, "--admitted-headers", mode]
        argvs[f"{names[1]} [refusing]"] = ["--algorithm", names[1], *REFUSING]
        argvs[f"{names[1]} {IN_APP}"] = ["--algorithm", names[1], *REFUSING, "--decide-in", "app"]
    for name in names[:2]:
        argvs[f"{name} {STOCK}"] = [*argvs[name], "--server", "stock"]
    results: dict[str, list[Sample]] = {label: [] for label in argvs}
    with tempfile.TemporaryDirectory(prefix="targets-bench-") as tmp:
        for r in range(args.rounds):
            for i, (label, argv) in enumerate(argvs.items()):
                log = Path(tmp) / f"{i}-{r}.parquet"
                with running_target([*argv, "--decision-log", str(log)], log_dir=Path(tmp)) as target:
                    s = measure(target.pid, f"{target.url}/api/items", args, "[refusing" in label)
                results[label].append(s)
                print(f"round {r + 1}/{args.rounds} {label:34s} {s.rps:7.0f} req/s  P99 {s.p99_ms:7.2f} ms  "
                      f"{s.cpu_us:6.1f} us CPU/request", file=sys.stderr)
        print("in-process rounds (no network)...", file=sys.stderr)
        configs = {label: overrides(build_parser().parse_args([*argv, "--port", "1"])) for label, argv in argvs.items()}
        # the app called directly: a refusal decided in the protocol never reaches it
        in_process = in_process_us([label for label in argvs if not label.endswith(("[refusing]", STOCK))], configs,
                                   Path(tmp))
        counted = {}
        if args.instructions:
            print("instruction counts under valgrind (about a minute per target, two at a time)...", file=sys.stderr)
            counted = bench_instructions.instructions(argvs, Path(tmp))
    report(results, in_process, counted, args)
    return 0


def report(results: dict[str, list[Sample]], in_process: dict[str, float], counted: dict[str, float],
           args: argparse.Namespace) -> None:
    """Medians per target, and each limiter's ratio to ``none`` as the median of per-round
    ratios: round r of a limiter is compared with round r of ``none``, measured seconds apart,
    so slow drift in the machine's load cancels out of the ratio."""
    def med(name: str, attr: str) -> float:
        return statistics.median(getattr(s, attr) for s in results[name])

    def paired(name: str, ratio: Callable[[Sample, Sample], float]) -> float:
        return statistics.median(ratio(s, b) for s, b in zip(results[name], results["none"]))

    print(f"\nGET /api/items, memory store, admitted responses with {args.admitted_headers} quota headers (unless named), "
          f"wrk -t{args.threads} -c{args.connections}, {args.seconds} s x "
          f"{args.rounds} rounds (medians); {os.cpu_count()} cores shared by wrk, the target and anything else running")
    print(f"{'target':34s} {'req/s':>7s} {'P99 ms':>8s} {'vs none':>8s} {'CPU us/req':>11s} {'vs none at equal CPU':>21s} "
          f"{'in-process us/req':>18s} {'added':>6s}" + (f" {'instr/req':>10s} {'vs none':>8s} {'at equal CPU':>13s}" if counted else ""))
    worst = {"at equal CPU (wrk)": 1.0, "in instructions": 1.0, "at equal CPU (instructions)": 1.0}
    share = med("none", "user_share")
    for name in results:
        ratios = {"at equal CPU (wrk)": paired(name, lambda s, b: b.cpu_us / s.cpu_us)}
        if counted:
            ratios["in instructions"] = counted["none"] / counted[name]
            # user time scales with the instructions; the kernel's per-request TCP work is the same
            ratios["at equal CPU (instructions)"] = 1 / (share / ratios["in instructions"] + 1 - share)
        if " [" not in name:  # the header-mode rows are the price list, not the verdict
            worst = {k: min(v, ratios.get(k, v)) for k, v in worst.items()}
        below = [k for k, v in ratios.items() if v < GOAL]
        flag = f"  below the {GOAL:.0%} goal {' and '.join(below)}" if below and name != "none" else ""
        asgi = (f"{in_process[name]:18.1f} {in_process[name] - in_process['none']:+6.1f}" if name in in_process
                else f"{'-':>18s} {'-':>6s}")
        line = (f"{name:34s} {med(name, 'rps'):7.0f} {med(name, 'p99_ms'):8.2f} {paired(name, lambda s, b: s.rps / b.rps):8.1%} "
                f"{med(name, 'cpu_us'):11.1f} {ratios['at equal CPU (wrk)']:21.1%} {asgi}")
        if counted:
            line += (f" {counted[name]:10,.0f} {ratios['in instructions']:8.1%} "
                     f"{ratios['at equal CPU (instructions)']:13.1%}")
        print(line + flag)
    refusing = next((name for name in results if name.endswith("[refusing]")), None)
    if refusing is not None:
        admitted = refusing.removesuffix(" [refusing]")

        def refusal(label: str) -> float:
            return statistics.median(s.cpu_us / a.cpu_us for s, a in zip(results[label], results[admitted]))

        print(f"a refusal's target CPU over an admitted request's ({admitted}, paired by round): {refusal(refusing):.2f} "
              f"decided in the protocol (goal <= {REFUSAL_GOAL:.2f}), {refusal(f'{admitted} {IN_APP}'):.2f} in the app")
    stock = _stock_line(results)
    if stock:
        print(stock)
    verdict = "; ".join(f"{worst[k]:.1%} {k}" for k in (worst if counted else ["at equal CPU (wrk)"]))
    print(f"\nworst limiter ({args.admitted_headers} headers) vs none: {verdict} (goal >= {GOAL:.0%}); "
          f"[... headers]: the first limiter with other quota headers on admitted responses; in-process: the app called "
          f"directly, no network (median of 5 x 5,000 requests): 'added' is what the limiter adds to a request"
          + (f"; instr/req: user-space instructions per request under valgrind (a lower bound: the kernel's TCP work, "
             f"the same for every target, is not counted); at equal CPU: with none's kernel share of CPU time "
             f"({1 - share:.0%}, psutil) added back" if counted else ""))


def _stock_line(results: dict[str, list[Sample]]) -> str | None:
    """Each stock-uvicorn row against the same target on the tuned server, paired by round."""
    parts = []
    for name in (n for n in results if n.endswith(STOCK)):
        tuned = name.removesuffix(f" {STOCK}")
        cpu = statistics.median(s.cpu_us / t.cpu_us for s, t in zip(results[name], results[tuned]))
        p99 = statistics.median(s.p99_ms for s in results[name]), statistics.median(t.p99_ms for t in results[tuned])
        parts.append(f"{tuned}: {cpu:.2f}x the CPU a request, P99 {p99[0]:.2f} vs {p99[1]:.2f} ms")
    return "stock uvicorn against the tuned server (paired by round): " + "; ".join(parts) if parts else None


if __name__ == "__main__":
    raise SystemExit(main())
