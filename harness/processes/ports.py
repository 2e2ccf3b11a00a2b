"""Free ports on 127.0.0.1 for the processes the suite starts (targets, our own redis-servers)."""

from __future__ import annotations

import socket
from contextlib import ExitStack

from targets.cli_args import HOST

__all__ = ["HOST", "bindable", "free_port", "free_ports"]


def bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((HOST, port))
        except OSError:
            return False
    return True


def free_port(*, cluster_bus: bool = False) -> int:
    """A port free now (and, for a Redis cluster node, its bus port + 10000 too)."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind((HOST, 0))
            port = s.getsockname()[1]
        if not cluster_bus or (port + 10000 < 65536 and bindable(port + 10000)):
            return port
    raise OSError("no free port found")


def free_ports(n: int, avoid: frozenset[int] = frozenset()) -> list[int]:
    """``n`` distinct ports free now (held open together while chosen, so none comes twice), none
    of ``avoid``: a port another process binds later (a remote run's Locust master, started after
    the side's ports are chosen) is free now and must not be chosen."""
    with ExitStack() as stack:
        ports: list[int] = []
        while len(ports) < n:
            sock = stack.enter_context(socket.socket())
            sock.bind((HOST, 0))
            if sock.getsockname()[1] not in avoid:
                ports.append(sock.getsockname()[1])
        return ports
