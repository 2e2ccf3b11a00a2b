"""``run_bench.py bench store-deadline``: a target on the Redis store with Redis made slow or hung
by a delaying proxy (harness/processes/delay_proxy.py: 0, 5, 50, 500 ms a reply, and a server
that never answers), side by side in one run: the target's P99 against its store budget, and
the share of decisions Redis made, the fallback made, or refused closed.

The budget is the policy's (the store's ``timeout_s``, default 50 ms): past it a decision is the
fallback's (fail-open) and an outage starts, with one probe to Redis every ``retry_s``; so with
Redis at 500 ms or hung the target's P99 should stay within the budget plus its own work, and
nearly every decision should be the fallback's. Requests go from a few client threads at a
steady rate (an open model is not needed here: what is measured is each answer's wait).
"""

from __future__ import annotations

import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np
import pyarrow.parquet as pq
import yaml
from rich.console import Console
from rich.table import Table

from analysis.latency import nearest_rank
from contract.params import Bounds
from harness.processes.delay_proxy import STALL, DelayProxy
from harness.processes.redis_server import RedisServer
from harness.processes.target import start_target
from targets.cli_args import number

from .args import REQUESTS, bench_parser

DELAYS_S = (0.0, 0.005, 0.05, 0.5, STALL)
BUDGET_S = 0.05
RETRY_S = 0.5
"""The probe interval during an outage: one decision that misses the budget makes the next this
long the fallback's (a stray timeout on a busy machine shows as a share of fallback at 0 ms)."""
CLIENTS = 8
WARM_UP = 20


def _config(url: str, log: Path, fail_open: bool) -> dict:
    return {"algorithm": "fixed_window", "limit": 1_000_000, "window_s": 60, "node": "node-1",
            "downstream": {"service_time": {"median_ms": 0}},
            "store": {"name": "redis", "url": url, "timeout_s": BUDGET_S, "retry_s": RETRY_S, "fail_open": fail_open},
            "decision_log": {"path": str(log), "flush_every_s": 0.2}}


def _drive(url: str, requests: int, rate: float) -> np.ndarray:
    """Each request's answer time (ms), ``requests`` at ``rate``/s over CLIENTS threads, each on
    its own keep-alive connection."""
    clients = threading.local()

    def one(i: int) -> float:
        if not hasattr(clients, "http"):
            clients.http = httpx.Client(timeout=10)
        time.sleep(max(0.0, start + i / rate - time.monotonic()))
        sent = time.monotonic()
        clients.http.get(f"{url}/api/items", headers={"x-api-key": f"k{i % 50}"})
        return (time.monotonic() - sent) * 1000.0

    start = time.monotonic()
    with ThreadPoolExecutor(CLIENTS) as pool:
        return np.asarray(list(pool.map(one, range(requests))))


def measure(redis_port: int, delay_s: float | None, requests: int, rate: float, fail_open: bool,
            root: Path) -> dict[str, float]:
    label = "hung" if delay_s is STALL else f"{delay_s * 1000:g}ms"
    log = root / f"decisions-{label}.parquet"
    with DelayProxy(("127.0.0.1", redis_port), 0.0) as proxy:  # a target checks its Redis as it starts
        path = root / f"target-{label}.yaml"
        path.write_text(yaml.safe_dump(_config(f"redis://{proxy.address[0]}:{proxy.address[1]}/0", log, fail_open)))
        target = start_target(["--config", str(path)], log_dir=root / "logs")
        _drive(target.url, WARM_UP, WARM_UP)  # the store's connections opened; an outage they caused over
        time.sleep(RETRY_S + 0.1)
        proxy.delay_s = delay_s  # then Redis slows down, or hangs
        try:
            ms = _drive(target.url, requests, rate)
        finally:
            target.stop()
    source = pq.read_table(log, columns=["source"]).column("source").to_pylist()[WARM_UP:]
    share = {name: source.count(name) / max(1, len(source)) for name in ("redis", "fallback", "fail_closed")}
    outages = sum(a == "redis" and b != "redis" for a, b in zip(["redis", *source], source))
    return {"delay": label, "p50": nearest_rank(ms, 50), "p99": nearest_rank(ms, 99), **share,
            "outages": outages}


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser("store-deadline", __doc__.splitlines()[0])
    parser.add_argument("--requests", type=number(int, REQUESTS), default=400, help="per delay (default 400)")
    parser.add_argument("--rate", type=number(float, Bounds(1, 5000)), default=200.0, help="requests/s (default 200)")
    parser.add_argument("--fail-closed", action="store_true", help="the store refuses during an outage instead")
    args = parser.parse_args(argv)
    table = Table(title=f"the target's answers with Redis slowed (store budget {BUDGET_S * 1000:g} ms, "
                        f"{'fail-closed' if args.fail_closed else 'fail-open'}, {args.requests} requests at {args.rate:g}/s)")
    for name in ("Redis reply delay", "P50 ms", "P99 ms", "P99 - budget ms", "Redis decided", "fallback", "refused closed",
                 "outages"):
        table.add_column(name, justify="right")
    with RedisServer() as server, tempfile.TemporaryDirectory() as tmp:
        for delay in DELAYS_S:
            row = measure(server.port, delay, args.requests, args.rate, not args.fail_closed, Path(tmp))
            table.add_row(row["delay"], f"{row['p50']:.1f}", f"{row['p99']:.1f}", f"{row['p99'] - BUDGET_S * 1000:+.1f}",
                          f"{row['redis']:.1%}", f"{row['fallback']:.1%}", f"{row['fail_closed']:.1%}", str(row["outages"]))
    Console().print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
