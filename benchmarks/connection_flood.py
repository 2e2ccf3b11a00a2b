"""The connection-flood phases of ``run_bench.py bench hostile``: a new client during a flood of
keep-alive connections hammering one key, against the suite's target and the NGINX peer in one run.

A flood of 100, 300 and 1,000 connections from 127.0.0.1 (one attacker process, asyncio, each
connection sending its next request as soon as the last is answered and opening again at once if
the server closes it; or ``h2load --h1`` with ``--h2load``, a C client that floods harder:
``apt-get install nghttp2-client``) meets two normal clients from 127.0.0.2: one that opens a new connection per
request (what a browser or a short-lived job does) and one that keeps its connection. Each
client sends one request every ``PROBE_EVERY_S`` on its own key; its latency runs from before the
connect to the whole answer. The target runs with ``--max-conns-per-address FLOOD_CAP`` (the
NGINX peer's config is the campaign's, with no ``limit_conn``). Phases alternate between the two
servers (target alone, NGINX alone, target flood 100, NGINX flood 100, ...) so the machine's
noise hits both alike.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import re
import subprocess
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from analysis.latency import nearest_rank
from harness.live.peers.standalone import peer_before_none
from harness.processes.spawn import spawn
from harness.processes.target import running_target
from targets.algorithms import Policy

from .raw_http import Exchange, connect, read_answers, request, split_answers

FLOODS = (100, 300, 1000)
FLOOD_CAP = 100
"""Connections per client address the target holds (``--max-conns-per-address``)."""
FLOOD_KEY = "flooded"
PROBE_EVERY_S = 0.05
NORMAL_ADDRESS = "127.0.0.2"
GOAL_VS_ALONE, GOAL_VS_NGINX = 10.0, 2.0


# the flood (a spawned process)

async def _hammer(port: int, deadline: float, counts: dict[str, int]) -> None:
    payload = request(x_api_key=FLOOD_KEY)
    while time.monotonic() < deadline:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.01)
            continue
        counts["connections"] += 1
        try:
            while time.monotonic() < deadline:
                writer.write(payload)
                got, buf = Exchange(), b""
                while not got.statuses:
                    chunk = await reader.read(65536)
                    if not chunk:
                        raise ConnectionError
                    buf = split_answers(buf + chunk, got)
                counts[str(got.statuses[0])] = counts.get(str(got.statuses[0]), 0) + 1
                if b"connection: close" in got.heads[0].lower():
                    break
        except OSError:
            pass
        writer.close()


def _flood(port: int, connections: int, seconds: float, ready: Any, out: Any) -> None:
    counts = {"connections": 0}

    async def run() -> None:
        deadline = time.monotonic() + seconds
        await asyncio.gather(*(_hammer(port, deadline, counts) for _ in range(connections)))

    ready.set()
    asyncio.run(run())
    out.put(counts)


# the normal clients (threads of the main process)

def _new_connections(port: int, seconds: float, into: list[float]) -> None:
    payload, deadline = request(x_api_key="normal-new"), time.perf_counter() + seconds
    while (start := time.perf_counter()) < deadline:
        try:
            with connect(port, timeout_s=30, source=NORMAL_ADDRESS) as sock:
                sock.sendall(payload)
                answered = bool(read_answers(sock, 1).statuses)
        except OSError:
            answered = False
        into.append((time.perf_counter() - start) * 1000 if answered else float("inf"))
        time.sleep(max(0.0, start + PROBE_EVERY_S - time.perf_counter()))


def _kept_connection(port: int, seconds: float, into: list[float]) -> None:
    payload, deadline = request(x_api_key="normal-kept"), time.perf_counter() + seconds
    sock = connect(port, timeout_s=30, source=NORMAL_ADDRESS)
    try:
        while (start := time.perf_counter()) < deadline:
            sock.sendall(payload)
            got = read_answers(sock, 1)
            into.append((time.perf_counter() - start) * 1000 if got.statuses else float("inf"))
            if not got.statuses:
                sock.close()
                sock = connect(port, timeout_s=30, source=NORMAL_ADDRESS)
            time.sleep(max(0.0, start + PROBE_EVERY_S - time.perf_counter()))
    finally:
        sock.close()


def _h2load(port: int, connections: int, seconds: float) -> subprocess.Popen:
    return spawn(["h2load", "--h1", "-c", str(connections), "-D", str(round(seconds)), "-H", f"x-api-key: {FLOOD_KEY}",
                  f"http://127.0.0.1:{port}/api/items"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def _h2load_counts(flood: subprocess.Popen, seconds: float) -> dict[str, int]:
    try:
        out, _ = flood.communicate(timeout=seconds + 10)
    except subprocess.TimeoutExpired:  # h2load may not end by -D while the server refuses its connections
        flood.kill()
        flood.wait()
        return {"stopped by the bench": 1}
    codes = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", out)
    errors = re.search(r"(\d+) errored", out)
    counts = dict(zip(("2xx", "3xx", "4xx", "5xx"), map(int, codes.groups()))) if codes else {}
    return {k: v for k, v in counts.items() if v} | ({"errored": int(errors.group(1))} if errors else {})


def phase(port: int, connections: int, seconds: float, h2load: bool = False) -> tuple[list[float], list[float], dict[str, int]]:
    """(new-connection latencies, kept-connection latencies, the flood's counts) of one phase."""
    spawn = multiprocessing.get_context("spawn")
    flood: Any = None
    counts = spawn.Queue()
    if connections and h2load:
        flood = _h2load(port, connections, seconds + 3)
        time.sleep(2)  # the flood's connections open
    elif connections:
        ready = spawn.Event()
        flood = spawn.Process(target=_flood, args=(port, connections, seconds + 3, ready, counts))
        flood.start()
        ready.wait(30)
        time.sleep(2)
    new: list[float] = []
    kept: list[float] = []
    clients = [threading.Thread(target=f, args=(port, seconds, into)) for f, into in ((_new_connections, new), (_kept_connection, kept))]
    for t in clients:
        t.start()
    for t in clients:
        t.join()
    if isinstance(flood, subprocess.Popen):
        return new, kept, _h2load_counts(flood, seconds)
    stats = counts.get(timeout=60) if flood else {}
    if flood:
        flood.join(10)
    return new, kept, stats


def run_connection_floods(console: Console, seconds: float, h2load: bool = False) -> None:
    servers = ("target", "nginx")
    results: dict[tuple[str, int], tuple[list[float], list[float], dict[str, int]]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-floods-") as tmp, ExitStack() as stack:
        target = stack.enter_context(running_target(
            ["--algorithm", "token_bucket", "--limit", "100", "--window", "60", "--service-ms", "0",
             "--max-conns-per-address", str(FLOOD_CAP)], log_dir=Path(tmp)))
        nginx_url, _ = stack.enter_context(peer_before_none("nginx", Policy(100, 60), Path(tmp) / "nginx"))
        ports = {"target": target.port, "nginx": int(nginx_url.rsplit(":", 1)[1])}
        for connections in (0, *FLOODS):
            for server in servers:
                console.print(f"[dim]{server}, {'alone' if not connections else f'flood of {connections:,}'}: {seconds:.0f} s[/dim]")
                results[server, connections] = phase(ports[server], connections, seconds, h2load)
    console.print(_table(results))
    console.print(_floods(results, "h2load --h1" if h2load else "asyncio"))


def _p(values: list[float], q: int) -> float:
    return nearest_rank(np.asarray(values), q)


def _table(results: dict[tuple[str, int], tuple[list[float], list[float], dict[str, int]]]) -> Table:
    table = Table(title=f"a new client (a new connection per request) and a kept one, one request each every "
                        f"{PROBE_EVERY_S * 1000:.0f} ms, during a flood of keep-alive connections on one key: "
                        f"the target (--max-conns-per-address {FLOOD_CAP}) and NGINX, same run")
    for col in ("flood", "target new P50 / P99 ms", "target kept P99", "NGINX new P50 / P99 ms", "NGINX kept P99",
                "target new P99 vs alone", "vs NGINX"):
        table.add_column(col, justify="right")
    alone = _p(results["target", 0][0], 99)
    for connections in (0, *FLOODS):
        (t_new, t_kept, _), (n_new, n_kept, _) = results["target", connections], results["nginx", connections]
        t99, n99 = _p(t_new, 99), _p(n_new, 99)
        vs_alone, vs_nginx = t99 / alone, t99 / n99
        table.add_row(
            f"{connections:,}" if connections else "alone",
            f"{_p(t_new, 50):.1f} / {t99:.1f}", f"{_p(t_kept, 99):.1f}", f"{_p(n_new, 50):.1f} / {n99:.1f}", f"{_p(n_kept, 99):.1f}",
            _coloured(vs_alone, GOAL_VS_ALONE), _coloured(vs_nginx, GOAL_VS_NGINX))
    table.caption = (f"goals under the 1,000 flood: the new client's P99 within {GOAL_VS_ALONE:g}x its P99 alone and "
                     f"within {GOAL_VS_NGINX:g}x NGINX's; inf: no answer. The flood and both clients share the machine's cores")
    return table


def _floods(results: dict[tuple[str, int], tuple[list[float], list[float], dict[str, int]]], tool: str) -> Table:
    table = Table(title=f"what each flood got ({tool}; "
                        "503: a connection past the target's per-address cap)")
    for col in ("flood", "target", "NGINX"):
        table.add_column(col, justify="right" if col == "flood" else "left")
    for connections in FLOODS:
        table.add_row(f"{connections:,}", _counts(results["target", connections][2]), _counts(results["nginx", connections][2]))
    return table


def _coloured(ratio: float, goal: float) -> str:
    colour = "green" if ratio <= goal else "red"
    return f"[{colour}]{ratio:.2f}x[/{colour}]"


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v:,}" for k, v in sorted(counts.items())) or "-"
