"""The CPU cost of a request as counted instructions: each target runs under valgrind's
callgrind, which counts every instruction the process executes, so the count is the same
whatever else the machine is doing (wrk's requests/s and even CPU seconds move by 15 points
between runs on a shared 2-core VM; this moves by under 1%).

A target is started twice, served ``few`` and then ``many`` requests (``GET /api/items`` over
32 keep-alive connections), and stopped; the difference of the two totals over the difference
of the requests is the marginal cost of one request: start-up, import and shutdown cancel out,
and the decision log's Parquet writing is included (flushed once, at shutdown, as the large
batches a loaded target writes). Python's hash seed is fixed so both runs execute alike.

Counted is user space only: the kernel's TCP work is the same per request for every target and
is left out, so each limiter's ratio to ``none`` here is a lower bound of its ratio at equal
CPU time.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from harness.processes.target import start_target

VALGRIND = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
CONNECTIONS = 32
READY_TIMEOUT_S = 300.0
"""Importing FastAPI, pydantic and pyarrow under valgrind takes about half a minute."""
_COLLECTED = re.compile(r"Collected : (\d+)")


def available() -> bool:
    return shutil.which("valgrind") is not None


async def _connection(port: int, requests: int, path: str) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()
    try:
        for _ in range(requests):
            writer.write(request)
            status = await reader.readline()
            if b" 200 " not in status:
                raise RuntimeError(f"answered {status!r}: the benchmark policy must not reject")
            length = 0
            while (line := await reader.readline()) != b"\r\n":
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            await reader.readexactly(length)
    finally:
        writer.close()


def serve(port: int, requests: int, path: str = "/api/items") -> None:
    """Send exactly ``requests`` requests (keep-alive, ``CONNECTIONS`` at a time) and read every
    answer: a fixed amount of work for the counted target, unlike wrk's fixed duration."""
    async def run() -> None:
        await asyncio.gather(*(_connection(port, requests // CONNECTIONS, path) for _ in range(CONNECTIONS)))

    asyncio.run(run())


def _counted(argv: Sequence[str], requests: int, log_dir: Path) -> int:
    """Instructions the target executed from start to exit, having served ``requests``."""
    config = log_dir / "flush-at-shutdown.json"
    config.write_text(json.dumps({"decision_log": {"flush_every_s": 3600}}), encoding="utf-8")
    run_dir = Path(tempfile.mkdtemp(dir=log_dir))
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    target = start_target([*argv, "--config", str(config), "--decision-log", str(run_dir / "log.parquet")],
                          log_dir=run_dir, ready_timeout_s=READY_TIMEOUT_S, env=env, launcher=VALGRIND)
    try:
        serve(target.port, requests)
    finally:
        code = target.stop(timeout_s=READY_TIMEOUT_S)
    found = _COLLECTED.findall(target.stderr())
    if code not in (0, -signal.SIGTERM) or not found:  # uvicorn re-raises the SIGTERM it handled
        raise RuntimeError(f"target under valgrind exited with {code}: {target.stderr()[-2000:]}")
    return int(found[-1])


def per_request(argv: Sequence[str], log_dir: Path, few: int = 640, many: int = 3200) -> float:
    """Marginal instructions per request of one target."""
    return (_counted(argv, many, log_dir) - _counted(argv, few, log_dir)) / (many - few)


def instructions(argvs: dict[str, list[str]], log_dir: Path) -> dict[str, float]:
    """Instructions per request of every target, counted ``os.cpu_count()`` at a time (the
    counts do not depend on how busy the machine is)."""
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        futures = {label: pool.submit(per_request, argv, log_dir) for label, argv in argvs.items()}
        return {label: future.result() for label, future in futures.items()}
