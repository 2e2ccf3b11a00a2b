"""The master's side of a run over several machines: where its remote workers join, and what
their clocks were (``scenarios.remote`` is the protocol; ``harness.live.worker`` the other end)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contract.errors import BadInput
from contract.schema import CLIENT_PART_GLOB, CLOCK_GLOB, JOINED_GLOB
from scenarios.remote import Clock

from .supervise import RunFailed

DEFAULT_PORT = 5557
"""Locust's own master port."""
DEFAULT_TIMEOUT_S = 60.0


class AddressError(BadInput):
    """A HOST:PORT that is not one."""


def parse_address(text: str, what: str) -> tuple[str, int]:
    """``HOST:PORT`` (or ``:PORT``, any address) for ``what`` (the option's name)."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise AddressError(f"{what} must be HOST:PORT with a port in 1-65535, got {text!r}")
    return host.strip("[]") or "0.0.0.0", int(port)


@dataclass(frozen=True)
class RemoteWorkers:
    """``--remote-workers N --master-bind HOST:PORT``: every run's master listens there (one fixed
    port, so a long-lived ``run_bench.py worker`` follows the campaign from run to run) and
    waits ``timeout_s`` for N workers."""

    count: int
    host: str = "0.0.0.0"
    port: int = DEFAULT_PORT
    timeout_s: float = DEFAULT_TIMEOUT_S

    def __post_init__(self) -> None:
        if self.count < 1:
            raise AddressError(f"--remote-workers must be at least 1, got {self.count}")
        if self.timeout_s <= 0:
            raise AddressError(f"--remote-timeout must be positive, got {self.timeout_s:g}")

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


def remote_clocks(handshake: Path, workers: int) -> dict[str, Any]:
    """run.json's ``remote_workers`` (per worker: its Locust id, clock offset and bound, whether
    the bound is under 1 ms) and ``clock_unbounded`` (the indexes that are not); a worker that
    joined but sent no client log fails the run by name."""
    logged = {int(p.name.split("-")[1]) for p in handshake.glob(CLIENT_PART_GLOB)}
    joined = sorted(int(p.name.split("-")[1]) for p in handshake.glob(JOINED_GLOB))
    missing = [i for i in joined if i not in logged]
    if missing:
        raise RunFailed(f"remote worker(s) {', '.join(map(str, missing))} of {workers} sent no client log "
                        "(the worker's own log, worker.log in its working directory, says why)")
    rows = []
    for path in sorted(handshake.glob(CLOCK_GLOB)):
        clock = json.loads(path.read_text(encoding="utf-8"))
        rows.append({"index": int(path.stem.split("-")[1]), "client_id": clock["client_id"],
                     "offset_ms": round(clock["offset_s"] * 1000, 4), "bound_ms": round(clock["bound_s"] * 1000, 4),
                     "pings": clock["pings"],
                     "bounded": Clock(clock["offset_s"], clock["bound_s"], clock["pings"]).bounded})
    return {"remote_workers": rows, "clock_unbounded": [r["index"] for r in rows if not r["bounded"]]}
