"""Free ports on 127.0.0.1 for the processes the suite starts (targets, our own redis-servers).

A port is chosen below the kernel's ephemeral range (``ip_local_port_range``), never by binding
port 0: a port the kernel hands out as 0 is an ephemeral one, and between this choice and the
child's listen() any outgoing connection of the machine may take it as its local port; the
child's bind (SO_REUSEADDR) then succeeds and its listen() fails, "Address already in use" (CI: a
module's ten targets, every one refused, while the suite's other workers sent thousands of
requests). No outgoing connection takes a port below that range. Chosen at random from the
system's entropy (a test that seeds ``random`` must not make two workers draw the same ports),
and tried by a bind: what another process listens on is passed over.

A bind cannot reserve a port for a child that listens seconds later, so two choices made at once
may draw the same free port, and the later listen() fails (CI, twice in one day: a slowapi target
beside another worker's processes; two targets of one module started together). So one process
never hands a port out twice within ``HELD_S``, and processes that choose at once take disjoint
shares: ``RATELIMIT_BENCH_PORT_SHARD=k/N`` draws only ports that are k modulo N (tests/conftest.py gives
each pytest-xdist worker its own; two campaigns run side by side on one machine can do the same)."""

from __future__ import annotations

import os
import random
import socket
import threading
import time
from contextlib import ExitStack
from pathlib import Path

from contract.errors import BadInput
from targets.cli_args import HOST

__all__ = ["HOST", "bindable", "free_port", "free_ports"]

LOWEST = 10_000
"""Below it: the registered ports of common services (a Redis on 6379, a Postgres on 5432)."""
CLUSTER_BUS = 10_000
"""A Redis cluster node's bus port: its port + 10000 (redis.io/docs: cluster tutorial)."""
_DRAW = random.SystemRandom()
HELD_S = 300.0
"""How long a port handed out is not handed out again by this process: its child listens on it
within seconds, or has failed."""
_given: dict[int, float] = {}
_given_lock = threading.Lock()
SHARD_ENV = "RATELIMIT_BENCH_PORT_SHARD"


def shard(raw: str | None = None) -> tuple[int, int]:
    """``(k, N)`` from ``RATELIMIT_BENCH_PORT_SHARD`` (``k/N``, 0 <= k < N); ``(0, 1)``, every port,
    where it is unset. CLUSTER_BUS is a multiple of the N one would use (2, 4, 5, 8, 10...), so a
    cluster node's bus port falls in its share too."""
    raw = os.environ.get(SHARD_ENV) if raw is None else raw
    if not raw:
        return 0, 1
    k, sep, n = raw.partition("/")
    if sep and k.strip().isdigit() and n.strip().isdigit() and int(k) < int(n):
        return int(k), int(n)
    raise BadInput(f"{SHARD_ENV}={raw!r}: expected k/N, two whole numbers with 0 <= k < N (say 0/4)")


def ephemeral_low(path: Path = Path("/proc/sys/net/ipv4/ip_local_port_range")) -> int:
    """The first port of the kernel's ephemeral range (Linux's default 32768 where it cannot be read)."""
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((HOST, port))
        except OSError:
            return False
    return True


def _candidates(cluster_bus: bool = False) -> range:
    """Where a listening port is drawn: from ``LOWEST`` up to the ephemeral range (a cluster node's
    bus port below it too), those of this process's share."""
    k, n = shard()
    return range(LOWEST + (k - LOWEST) % n, ephemeral_low() - (CLUSTER_BUS if cluster_bus else 0), n)


def _recently_given() -> set[int]:
    """The ports this process handed out within ``HELD_S`` (older ones forgotten)."""
    now = time.monotonic()
    for port in [p for p, at in _given.items() if now - at > HELD_S]:
        del _given[port]
    return set(_given)


def _give(ports: list[int]) -> list[int]:
    now = time.monotonic()
    _given.update((p, now) for p in ports)
    return ports


def free_port(*, cluster_bus: bool = False) -> int:
    """A port free now (and, for a Redis cluster node, its bus port + 10000 too)."""
    candidates = _candidates(cluster_bus)
    with _given_lock:
        given = _recently_given()
        for _ in range(200):
            port = _DRAW.choice(candidates)
            if port not in given and bindable(port) and (not cluster_bus or bindable(port + CLUSTER_BUS)):
                return _give([port])[0]
    raise OSError(f"no free port found in {candidates.start}-{candidates.stop - 1}")


def free_ports(n: int, avoid: frozenset[int] = frozenset()) -> list[int]:
    """``n`` distinct ports free now (held open together while chosen, so none comes twice), none
    of ``avoid``: a port another process binds later (a remote run's Locust master, started after
    the side's ports are chosen) is free now and must not be chosen."""
    candidates = _candidates()
    with _given_lock, ExitStack() as stack:
        avoid = avoid | _recently_given()
        ports: list[int] = []
        for _ in range(200 + 10 * n):
            if len(ports) == n:
                return _give(ports)
            port = _DRAW.choice(candidates)
            if port in avoid or port in ports:
                continue
            sock = stack.enter_context(socket.socket())
            try:
                sock.bind((HOST, port))
            except OSError:
                continue
            ports.append(port)
        if len(ports) == n:
            return _give(ports)
    raise OSError(f"no {n} free ports found in {candidates.start}-{candidates.stop - 1}")
