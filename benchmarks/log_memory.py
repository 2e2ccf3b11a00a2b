"""``run_bench.py bench log-memory``: how an access log's size moves the reader's peak memory.

For each size (default 100,000 and 1,000,000 lines of the generated ``combined`` log of ``bench
traffic``), three fresh processes each do one thing and report the kernel's peak RSS (its
high-water mark, so nothing between samples is missed), beside the peak after the imports alone:

1. stream: every block read through the bounded stream and parsed, nothing kept (what
   ``scenarios/access_log/stream.py`` promises to hold flat whatever the file's size);
2. columns: the log read into the records every policy is judged on (``load_traffic``: a time,
   an identity, a route and an agent code a line, written to a temporary file in time order;
   memory keeps the distinct identities, routes and agents);
3. judged: the columns judged against ``bench traffic``'s 3 policies, as ``validate --traffic``
   does (replay workers, forked for 200,000 requests or more, counted by their own peak);
4. replayed: ``simulate --trace LOG --algorithm token_bucket`` whole (the requests held in memory
   and replayed, logs, report), or its refusal, before anything is replayed, of a log past
   ``scenarios.trace_file.REPLAY_BYTES`` (1 GiB).

The sizes are printed side by side with the growth per extra line between them: the stream's is
near 0 bytes, and so are the columns' and the judgement's: the requests stay on disk, read back a
block at a time. The replay's is several hundred bytes a request (it holds them), up to its bound.
"""

from __future__ import annotations

import argparse
import io
import multiprocessing
import resource
import tempfile
from concurrent.futures import ProcessPoolExecutor
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from rich.console import Console
from rich.table import Table

from benchmarks.args import LOG_LINES, bench_parser, check_log_disk

STEPS = ("stream", "columns", "judged", "replayed")
REFUSED = -1
"""The replayed step's rows where the log is past the replay's bound (refused, exit 2; else 0:
the step reports memory only)."""


def _peak_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


Figures = tuple[int, int, int, int, int]
"""(rows, peak KiB after the imports, peak KiB after the step, the largest forked worker's peak
KiB, the peak KiB of the process and its workers summed (PSS; the replayed step only))."""


def _measure(path: str, step: str) -> Figures:
    """``Figures`` of one step, in a fresh process."""
    from benchmarks.traffic import POLICIES, TreePeak
    from harness.campaign.log_traffic import load_traffic
    from harness.campaign.policy_file import parse_policy
    from harness.validate.traffic import judge
    from scenarios.access_log import open_log

    base, tree_kib = _peak_kib(), 0
    if step == "stream":
        rows = sum(len(b) for b in open_log(Path(path), "combined").batches())
    elif step == "replayed":
        from harness.cli.main import main

        base, said = _peak_kib(), io.StringIO()
        with tempfile.TemporaryDirectory(prefix="bench-log-memory-out-") as out, redirect_stdout(said), \
                redirect_stderr(said), TreePeak() as tree:
            code = main(["simulate", "--trace", path, "--algorithm", "token_bucket", "--out", f"{out}/res"])
        tree_kib = tree.pss // 1024
        if code not in (0, 2):
            raise RuntimeError(f"simulate --trace {path} exited {code}: {said.getvalue()[-2000:]}")
        rows = REFUSED if code == 2 else 0
    else:
        traffic = load_traffic(Path(path))
        rows = traffic.requests
        if step == "judged":
            judge(traffic, [parse_policy(p, p["name"]) for p in POLICIES])
    return rows, base, _peak_kib(), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, tree_kib


def measure(path: Path, step: str) -> Figures:
    """``_measure`` in a process of its own (spawned: no pages of this one's)."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(_measure, str(path), step).result()


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(float(part)) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected line counts separated by commas (100000,1000000)") from None
    for size in sizes:
        LOG_LINES.check("--lines", size, argparse.ArgumentTypeError)  # type: ignore[arg-type]
    if len(sizes) < 2:
        raise argparse.ArgumentTypeError(f"{text!r}: give two sizes or more, to compare")
    return sorted(sizes)


def main(argv: list[str]) -> int:
    from benchmarks.traffic import generate_combined

    ap = bench_parser("log-memory", __doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=_sizes, default=[100_000, 1_000_000], metavar="N,N[,...]",
                    help="log sizes in lines, compared side by side (default 100000,1000000)")
    args = ap.parse_args(argv)
    check_log_disk(ap, args.lines[-1])
    figures: dict[int, dict[str, Figures]] = {}
    mib: dict[int, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-log-memory-") as tmp:
        for lines in args.lines:
            path = Path(tmp) / f"{lines}.combined.log"
            generate_combined(path, lines, rate=lines / 86_400 * 4, clients=20_000)
            mib[lines] = path.stat().st_size / 2**20
            figures[lines] = {step: measure(path, step) for step in STEPS}
            path.unlink()
    Console().print(table(args.lines, figures, mib))
    return 0


def table(sizes: list[int], figures: dict[int, dict[str, Figures]], mib: dict[int, float]) -> Table:
    out = Table(title="peak RSS (kernel high-water mark) by log size, each step in a fresh process", title_justify="left")
    out.add_column("step", justify="left")
    for lines in sizes:
        out.add_column(f"{lines:,} lines ({mib[lines]:,.0f} MiB)", justify="right")
    out.add_column(f"bytes per line, {sizes[0]:,} -> {sizes[-1]:,}", justify="right")
    for step in STEPS:
        cells = []
        for lines in sizes:
            rows, base, peak, worker, tree = figures[lines][step]
            extra = f"; worker {worker / 2**10:,.0f}" if worker else ""
            extra += f"; with its workers {tree / 2**10:,.0f} PSS" if tree else ""
            extra += "; refused: past the bound" if rows == REFUSED else ""
            cells.append(f"{peak / 2**10:,.0f} MiB (+{(peak - base) / 2**10:,.0f} over imports{extra})")
        first, last = figures[sizes[0]][step], figures[sizes[-1]][step]
        growth = "-" if REFUSED in (first[0], last[0]) else f"{(last[2] - first[2]) * 1024 / (sizes[-1] - sizes[0]):,.0f}"
        out.add_row(step, *cells, growth)
    return out
