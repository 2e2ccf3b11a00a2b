#!/usr/bin/env python3
"""Benchmark: `run_bench.py report` on a synthetic results folder of 10 million decision rows.

Goal (issue 7): under 30 s and 4 GB. The folder holds four simulation-style runs of 2M decisions
(1,000 keys, ideal decisions included) and two live-style runs of 1M decisions, each with a 1M-row
client log, cpu.csv, run.json and ``ideal_allowed`` null (so the sliding-log replay runs too).
The report runs in a child process, ``--repeat`` times (median printed): wall time, CPU time
and peak RSS of the child's whole process tree (worker processes included), with the load average.

    .venv/bin/python benchmarks/analysis_10m.py [--rows 10000000] [--keep DIR] [--repeat 3]
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import psutil
import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from benchmarks.args import REQUESTS, ROUNDS, bench_parser
from harness.processes.spawn import spawn
from targets.cli_args import number

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from contract.schema import CLIENT_FILE, CLIENT_SCHEMA, CPU_FILE, DECISION_SCHEMA, DECISIONS_FILE, RUN_FILE  # noqa: E402

LIMIT, WINDOW = 100.0, 60.0
T0 = 1_700_000_000.0


def _strings(codes: np.ndarray, names: list[str]) -> pa.Array:
    return pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32)), pa.array(names)).cast(pa.string())


def decisions(rng: np.random.Generator, n: int, algorithm: str, t0: float, live: bool) -> pa.Table:
    t = t0 + np.sort(rng.uniform(0, 3600, n))
    keys = rng.integers(0, 1000, n)
    abusive = keys < 50
    allowed = rng.random(n) < np.where(abusive, 0.3, 0.97)
    ideal = pa.nulls(n, pa.bool_()) if live else pa.array(allowed | (rng.random(n) < 0.01))
    cols = {
        "t": t, "node": _strings(np.zeros(n), ["node0"]), "algorithm": _strings(np.zeros(n), [algorithm]),
        "store": _strings(np.zeros(n), ["memory"]), "limit_name": _strings(abusive, ["per_user", "per_ip"]),
        "key": _strings(keys, [f"user-{i}" for i in range(1000)]), "cost": np.ones(n), "allowed": allowed,
        "remaining": rng.uniform(0, LIMIT, n), "retry_after_s": np.where(allowed, 0.0, rng.uniform(0, WINDOW, n)),
        "decision_us": rng.gamma(2.0, 10.0, n), "client_class": _strings(abusive, ["legit", "abusive"]),
        "request_id": pa.array(np.arange(n)).cast(pa.string()), "client_id": _strings(keys, [f"c-{i}" for i in range(1000)]),
        "route": _strings(np.zeros(n), ["GET /api/items"]), "delay_s": np.zeros(n), "ideal_allowed": ideal,
        "source": _strings(np.zeros(n), ["memory"]), "adaptive_limit": pa.nulls(n, pa.float64()), "arrived_t": t,
    }
    return pa.Table.from_pydict(cols, schema=DECISION_SCHEMA)


def client(rng: np.random.Generator, d: pa.Table) -> pa.Table:
    n = d.num_rows
    intended = d["t"].to_numpy() - 0.002
    sent = intended + rng.exponential(0.001, n)
    allowed = d["allowed"].to_numpy(zero_copy_only=False)
    done = sent + np.where(allowed, rng.lognormal(np.log(0.02), 0.6, n), 0.001)
    return pa.Table.from_pydict({"request_id": d["request_id"], "intended_t": intended, "sent_t": sent, "done_t": done,
                                 "status": np.where(allowed, 200, 429).astype(np.int32), "attempt": np.ones(n, np.int32),
                                 "limit_fields": pa.nulls(n, pa.string()), "client_address": pa.nulls(n, pa.string()),
                                 "role": ["plan"] * n},
                                schema=CLIENT_SCHEMA)


def synthesise(root: Path, rows: int) -> None:
    rng = np.random.default_rng(1)
    big, small = rows // 5, rows // 10  # 4 x 20% + 2 x 10%
    (root / "runs").mkdir(parents=True)
    (root / "campaign.yaml").write_text(yaml.safe_dump({"name": "bench-10m", "policy": {"limit": LIMIT, "window_s": WINDOW}}))
    for algorithm in ("fixed_window", "sliding_log", "token_bucket", "gcra"):
        run = root / "runs" / f"steady__{algorithm}__memory"
        run.mkdir()
        pq.write_table(decisions(rng, big, algorithm, 0.0, live=False), run / DECISIONS_FILE)
    for algorithm in ("fixed_window", "adaptive"):
        run = root / "runs" / f"unhealthy_downstream__{algorithm}__memory"
        run.mkdir()
        d = decisions(rng, small, algorithm, T0, live=True)
        pq.write_table(d, run / DECISIONS_FILE)
        pq.write_table(client(rng, d), run / CLIENT_FILE)
        ts = T0 + np.arange(0, 3601, 1.0)
        lines = ["t,process,role,cpu_percent,rss_bytes"]
        for proc, role in (("target:node0", "target"), ("locust:w0", "generator")):
            lines += [f"{t},{proc},{role},{60.0},{10**8}" for t in ts]
        (run / CPU_FILE).write_text("\n".join(lines) + "\n")
        info = {"schema": 1, "status": "ok", "scenario": "unhealthy_downstream", "algorithm": algorithm, "store": "memory",
                "policy": {"limit": LIMIT, "window_s": WINDOW, "burst": None},
                "phases": [{"name": "degraded", "start_t": T0 + 1200, "end_t": T0 + 2400}]}
        (run / RUN_FILE).write_text(json.dumps(info))


def _tree_rss(proc: psutil.Process) -> int:
    """Resident memory of a process and all its descendants (a worker pool counts in full)."""
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):  # a worker may exit between listing and reading
            total += p.memory_info().rss
    return total


def time_report(root: Path) -> tuple[int, float, float, int]:
    """One ``report`` in a child process: exit code, wall s, CPU s (the whole tree) and peak RSS
    of the tree in bytes (summed over processes, sampled every 20 ms)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    child = spawn([sys.executable, str(ROOT / "run_bench.py"), "report", str(root)],
                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    watched, peak = psutil.Process(child.pid), 0
    while child.poll() is None:
        with contextlib.suppress(psutil.Error):
            peak = max(peak, _tree_rss(watched))
        time.sleep(0.02)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return child.returncode, wall, cpu, max(peak, after.ru_maxrss * 1024)


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser("analysis-10m", __doc__.splitlines()[0])
    parser.add_argument("--rows", type=number(int, REQUESTS), default=10_000_000, help="decision rows in the folder")
    parser.add_argument("--keep", type=Path, help="build the folder here and keep it (or reuse it when it exists)")
    parser.add_argument("--repeat", type=number(int, ROUNDS), default=3, help="time the report this many times; print the median")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp) / "bench-10m"
        if not (root / "runs").is_dir():
            started = time.perf_counter()
            synthesise(root, args.rows)
            print(f"synthesised in {time.perf_counter() - started:.1f} s")
        total = sum(pq.ParquetFile(p).metadata.num_rows for p in root.glob(f"runs/*/{DECISIONS_FILE}"))
        print(f"{total:,} decision rows: {root}")
        results = []
        for i in range(args.repeat):
            load = os.getloadavg()[0]
            code, wall, cpu, rss = time_report(root)
            results.append((wall, cpu, rss))
            print(f"report {i + 1}/{args.repeat}: exit {code}, {wall:.1f} s wall, {cpu:.1f} s CPU, "
                  f"peak RSS {rss / 2**20:,.0f} MB, load average before {load:.2f}", flush=True)
            if code != 0:
                return code
        wall, cpu, rss = (statistics.median(r[k] for r in results) for k in range(3))
        print(f"median of {len(results)}: {wall:.1f} s wall, {cpu:.1f} s CPU, peak RSS {rss / 2**20:,.0f} MB "
              f"(goal: < 30 s, < 4,096 MB; load average now {os.getloadavg()[0]:.2f}: other work inflates wall time)")
        return 0


if __name__ == "__main__":
    sys.exit(main())
