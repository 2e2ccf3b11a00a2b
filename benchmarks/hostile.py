"""``run_bench.py bench hostile``: what hostile clients cost a normal one, side by side in one run.

One target (token bucket, 100 per 60 s, ``--max-keys 10000``, no downstream delay, a 3 s head
timeout so slowloris connections are seen closed within the phase) and one normal client on a
keep-alive connection, one request every 10 ms (64 API keys in turn, so it is never limited).
Phases, each measured by the normal client's latency (P50, P99, and P99 over the median P99 of
the alone phases, which come before and after each attack, as the machine's noise moves):

- alone;
- big heads: 20 connections each sending a 10 MB head that never ends, in 64 KiB pieces until
  the target answers, over and over;
- slowloris: 200 connections each sending a head one line a second;
- key flood: new API keys at ``flood_rate`` per second (pipelined batches on 8 connections),
  while a bursty key sends 150 requests every 5 s. Its admissions are compared with what an
  unbounded token bucket admits at the same decision times (the target's decision log replayed
  through the suite's own algorithm): the over-admission a bounded key store causes.

Then the connection floods (benchmarks/connection_flood.py): 100, 300 and 1,000 keep-alive
connections hammering one key, a normal client that opens a new connection per request beside one
that keeps its own, against the target and the NGINX peer in the same run, side by side
(``--floods-only`` runs just these).

Attackers run in their own process (spawned), so the normal client's timing never waits on
their share of the interpreter; the machine's cores are still shared, which is the point. The
target's RSS is read before and after each phase.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import select
import shutil
import socket
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import psutil
from rich.console import Console
from rich.table import Table

from analysis.latency import nearest_rank
from benchmarks.args import bench_parser
from contract import decision_file
from harness.processes.target import running_target
from targets.algorithms import ALGORITHMS, Policy, build_params
from targets.stores.memory import MemoryStore

from .connection_flood import run_connection_floods
from .raw_http import Exchange, connect, request, split_answers

LIMIT, WINDOW, MAX_KEYS = 100, 60, 10_000
TARGET_ARGS = ["--algorithm", "token_bucket", "--limit", str(LIMIT), "--window", str(WINDOW), "--max-keys", str(MAX_KEYS),
               "--service-ms", "0", "--head-timeout", "3"]
PROBE_EVERY_S = 0.01
PROBE_KEYS = 64
BURSTY_KEY, BURST, BURST_EVERY_S = "bursty", 150, 5.0
GOAL_P99_RATIO, GOAL_OVER_ADMISSION = 2.0, 1.2


# the normal client (main process)

def probe(port: int, seconds: float) -> tuple[list[float], int]:
    """Latencies (ms) of one request every ``PROBE_EVERY_S`` on one keep-alive connection, and
    how many answers were 5xx."""
    latencies, five_xx = [], 0
    requests = [request(x_api_key=f"normal-{i}") for i in range(PROBE_KEYS)]
    sock, i = connect(port, timeout_s=10), 0
    deadline = next_at = time.perf_counter()
    deadline += seconds
    try:
        while next_at < deadline:
            time.sleep(max(0.0, next_at - time.perf_counter()))
            start = time.perf_counter()
            sock.sendall(requests[i % PROBE_KEYS])
            got, buf = Exchange(), b""
            while not got.statuses:
                chunk = sock.recv(65536)
                if not chunk:
                    raise ConnectionError("the target closed the normal client's connection")
                buf = split_answers(buf + chunk, got)
            latencies.append((time.perf_counter() - start) * 1000)
            five_xx += got.statuses[0] >= 500
            i += 1
            next_at += PROBE_EVERY_S
    finally:
        sock.close()
    return latencies, five_xx


# attackers (a spawned process each; results come back on a queue)

def big_heads(port: int, seconds: float, connections: int = 20, head_mb: int = 10) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    counts = {"connections": 0, "431": 0, "MB written": 0.0}
    lock = threading.Lock()
    chunk = b"a" * 65536

    def one() -> None:
        while time.monotonic() < deadline:
            sent = 0
            try:
                with connect(port, timeout_s=5) as sock:
                    sock.sendall(b"GET /api/items HTTP/1.1\r\nHost: t\r\nX-Big: ")
                    try:
                        # a piece at a time, until the target answers: what is measured is the
                        # target's work, not this process copying megabytes into a dead socket
                        while sent < head_mb << 20 and time.monotonic() < deadline and not select.select([sock], [], [], 0.005)[0]:
                            sock.sendall(chunk)
                            sent += len(chunk)
                    except OSError:
                        pass  # the target answered and closed
                    got = _read_all(sock)
            except OSError:
                got = Exchange()
            with lock:
                counts["connections"] += 1
                counts["431"] += got.statuses.count(431)
                counts["MB written"] += sent / 2**20

    threads = [threading.Thread(target=one) for _ in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return counts


def _read_all(sock: socket.socket) -> Exchange:
    got, buf = Exchange(), b""
    try:
        while chunk := sock.recv(65536):
            buf = split_answers(buf + chunk, got)
    except OSError:
        pass
    return got


async def _slowloris(port: int, seconds: float, connections: int, line_every_s: float) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    counts = {"connections": connections, "closed by the target": 0, "408": 0}

    async def one() -> None:
        while time.monotonic() < deadline:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET /api/items HTTP/1.1\r\nHost: t\r\n")
            while time.monotonic() < deadline:
                try:
                    data = await asyncio.wait_for(reader.read(4096), line_every_s)
                except TimeoutError:
                    writer.write(b"X-Slow: 1\r\n")
                    continue
                counts["408"] += data.startswith(b"HTTP/1.1 408")
                counts["closed by the target"] += 1
                break
            writer.close()

    await asyncio.gather(*(one() for _ in range(connections)))
    return counts


def slowloris(port: int, seconds: float, connections: int = 200, line_every_s: float = 1.0) -> dict[str, Any]:
    return asyncio.run(_slowloris(port, seconds, connections, line_every_s))


async def _answers(reader: asyncio.StreamReader, n: int) -> list[int]:
    got, buf = Exchange(), b""
    while len(got.statuses) < n:
        chunk = await reader.read(65536)
        if not chunk:
            raise ConnectionError("the target closed a flood connection")
        buf = split_answers(buf + chunk, got)
    return got.statuses


async def _flood(port: int, seconds: float, rate: float, connections: int, batch: int) -> dict[str, Any]:
    start = time.monotonic()
    deadline = start + seconds
    counts = {"flood requests": 0, "bursty sent": 0, "bursty admitted": 0, "5xx": 0}

    async def rotate(c: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        every, n, next_at = batch * connections / rate, 0, time.monotonic() + c * batch / rate
        while next_at < deadline:
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))
            writer.write(b"".join(request(x_api_key=f"flood-{c}-{n + i}") for i in range(batch)))
            statuses = await _answers(reader, batch)
            counts["flood requests"] += batch
            counts["5xx"] += sum(s >= 500 for s in statuses)
            n += batch
            next_at += every
        writer.close()

    async def bursty() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        next_at = start + 0.5
        while next_at < deadline:
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))
            writer.write(request(x_api_key=BURSTY_KEY) * BURST)
            statuses = await _answers(reader, BURST)
            counts["bursty sent"] += BURST
            counts["bursty admitted"] += statuses.count(200)
            next_at += BURST_EVERY_S
        writer.close()

    await asyncio.gather(bursty(), *(rotate(c) for c in range(connections)))
    counts["flood keys/s"] = round(counts["flood requests"] / (time.monotonic() - start))
    return counts


def flood(port: int, seconds: float, rate: float = 3000, connections: int = 8, batch: int = 25) -> dict[str, Any]:
    return asyncio.run(_flood(port, seconds, rate, connections, batch))


ATTACKS = {"big heads": big_heads, "slowloris": slowloris, "key flood": flood}


def _attack(name: str, port: int, seconds: float, kwargs: dict[str, Any], ready: Any, out: Any) -> None:
    ready.set()
    try:
        out.put(ATTACKS[name](port, seconds, **kwargs))
    except Exception as exc:  # reported in the table, the run goes on
        out.put({"error": repr(exc)})


# the run

def unbounded_admissions(times: list[float]) -> int:
    """What a token bucket that never forgets the key admits at these decision times."""
    store = MemoryStore(ALGORITHMS["token_bucket"], build_params("token_bucket", Policy(LIMIT, WINDOW)))
    return sum(store.decide(BURSTY_KEY, t, 1.0)[0] for t in times)


def run_hostile_bench(console: Console, phase_s: float = 8.0, flood_s: float = 30.0, flood_rate: float = 2400) -> None:
    attacks: list[tuple[str, float, dict[str, Any]]] = [
        ("big heads", phase_s, {}), ("slowloris", phase_s, {}), ("key flood", flood_s, {"rate": flood_rate})]
    phases = [("alone", phase_s, {})]
    for i, attack in enumerate(attacks, 2):  # alone between attacks: the machine's noise moves, the baseline follows it
        phases += [attack, (f"alone ({i})", phase_s, {})]
    spawn = multiprocessing.get_context("spawn")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-hostile-") as tmp:
        log = Path(tmp) / "decisions.parquet"
        with running_target([*TARGET_ARGS, "--decision-log", str(log)], log_dir=Path(tmp)) as target:
            rss = psutil.Process(target.pid).memory_info
            for name, seconds, kwargs in phases:
                console.print(f"[dim]{name}: {seconds:.0f} s[/dim]")
                before = rss().rss
                attacker, result = None, spawn.Queue()
                if name in ATTACKS:
                    ready = spawn.Event()
                    attacker = spawn.Process(target=_attack, args=(name, target.port, seconds, kwargs, ready, result))
                    attacker.start()
                    ready.wait(30)
                latencies, five_xx = probe(target.port, seconds)
                stats = result.get(timeout=60) if attacker else {}
                if attacker:
                    attacker.join(10)
                rows.append((name, latencies, five_xx, before, rss().rss, stats, target.process.poll() is None))
        bursty = decision_file.read_table(log, columns=["t", "key", "allowed"], filters=[("key", "=", f"api_key:{BURSTY_KEY}")])
    console.print(_table(rows))
    console.print(_attacks(rows))
    times = sorted(bursty.column("t").to_pylist())
    admitted, expected = sum(bursty.column("allowed").to_pylist()), unbounded_admissions(times)
    ratio = admitted / expected if expected else float("nan")
    colour = "green" if ratio <= GOAL_OVER_ADMISSION else "red"
    console.print(f"in-debt key under the key flood (--max-keys {MAX_KEYS:,}; {BURST} requests every {BURST_EVERY_S:g} s, "
                  f"{len(times)} decided): admitted {admitted}, an unbounded token bucket admits {expected} at the same "
                  f"decision times: [{colour}]{ratio:.2f}x[/{colour}] (goal <= {GOAL_OVER_ADMISSION}x)", highlight=False)


def _table(rows: list[tuple]) -> Table:
    table = Table(title=f"a normal client (one request every {PROBE_EVERY_S * 1000:.0f} ms) alone and during each attack")
    for col in ("phase", "requests", "P50 ms", "P99 ms", "P99 vs alone", "5xx", "target up", "RSS MB before -> after"):
        table.add_column(col, justify="left" if col == "phase" else "right")
    alone = statistics.median(_p99(latencies) for name, latencies, *_ in rows if name.startswith("alone"))
    for name, latencies, five_xx, before, after, _, up in rows:
        p99 = _p99(latencies)
        colour = "green" if p99 / alone <= GOAL_P99_RATIO else "red"
        table.add_row(name, f"{len(latencies):,}", f"{statistics.median(latencies):.2f}", f"{p99:.2f}",
                      f"[{colour}]{p99 / alone:.2f}x[/{colour}]", str(five_xx), "yes" if up else "[red]no[/red]",
                      f"{before / 2**20:.0f} -> {after / 2**20:.0f}")
    table.caption = (f"P99 vs alone: over the median P99 of the alone phases; goal: within {GOAL_P99_RATIO:g}x during any attack. "
                     "The attackers share the machine's cores")
    return table


def _attacks(rows: list[tuple]) -> Table:
    table = Table(title="what each attacker did")
    table.add_column("phase")
    table.add_column("counts")
    for name, *_, stats, _ in rows:
        if stats:
            table.add_row(name, ", ".join(f"{k}: {v:,.0f}" if isinstance(v, (int, float)) else f"{k}: {v}" for k, v in stats.items()))
    return table


def _p99(values: list[float]) -> float:
    return nearest_rank(np.asarray(values), 99)


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser("hostile", __doc__.splitlines()[0])
    parser.add_argument("--phase-seconds", type=float, default=8.0, help="length of each alone, big-heads and slowloris phase")
    parser.add_argument("--flood-seconds", type=float, default=30.0, help="length of the key flood")
    parser.add_argument("--flood-rate", type=float, default=2400, help="new API keys per second during the key flood")
    parser.add_argument("--connection-flood-seconds", type=float, default=8.0, help="length of each connection-flood phase")
    parser.add_argument("--floods-only", action="store_true", help="run only the connection floods (target and NGINX)")
    parser.add_argument("--h2load", action="store_true", help="flood with h2load --h1 (apt-get install nghttp2-client), not asyncio")
    args = parser.parse_args(argv)
    for flag, value in (("--phase-seconds", args.phase_seconds), ("--flood-seconds", args.flood_seconds),
                        ("--flood-rate", args.flood_rate), ("--connection-flood-seconds", args.connection_flood_seconds)):
        if not 0 < value <= 3600:
            parser.error(f"{flag}: must be above 0 and at most 3600, got {value:g}")
    console = Console()
    if not args.floods_only:
        run_hostile_bench(console, args.phase_seconds, args.flood_seconds, args.flood_rate)
    if args.h2load and shutil.which("h2load") is None:
        parser.error("--h2load: h2load is not installed (apt-get install nghttp2-client)")
    run_connection_floods(console, args.connection_flood_seconds, args.h2load)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
