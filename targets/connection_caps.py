"""How many connections a target process holds open, in all and per client address (NGINX's
``limit_conn`` keyed on ``$binary_remote_addr``), and the answer a connection past a cap gets.

Why a cap and not only a faster loop: the event loop serves every busy connection once per
iteration (uvloop, like libuv, accepts every pending connection each iteration, so accepting is
not what starves), so a new client waits about (busy connections) x (work per request) for its
first answer: 1,000 flooding keep-alive connections made that seconds on one process. Bounding
the connections one address holds bounds that wait, whatever one client does.

A connection past a cap is answered at once, before anything is read, parsed or routed: one
pre-encoded 503 (``limit_conn_status``'s default) and the close; it never counts.
"""

from __future__ import annotations

import resource
from collections import Counter
from dataclasses import dataclass, field

MAX_CONNECTIONS = 4096
"""Per process: every connection costs a file descriptor and a share of each loop iteration."""
MAX_PER_ADDRESS = 1024
"""Per process and client address: above the suite's replay engine's 1,000 connections per target
(scenarios/raw_replay.py), so a campaign's load generator never meets it; set lower (as the flood
benchmark does) where clients have addresses of their own."""
FD_MARGIN = 256
"""Open files a process keeps for everything but its connections (logs, sockets to siblings, Redis)."""
BACKLOG = 2048
"""The listen queue (uvicorn's default, stated here: a node's processes listen before uvicorn starts)."""

_BODY = b"Too many connections from this address."
REFUSAL = (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\nretry-after: 1\r\n"
           b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(_BODY), _BODY))
"""Encoded once: a refused connection costs a counter lookup and one write."""


@dataclass
class ConnectionCaps:
    """The open connections of one process, counted on admission and released on close."""

    total: int = MAX_CONNECTIONS
    per_address: int = MAX_PER_ADDRESS
    open: Counter[str] = field(default_factory=Counter)
    held: int = 0
    refused: int = 0

    def admit(self, address: str) -> bool:
        """Count a new connection from ``address`` in, or refuse it (False: not counted)."""
        if self.held >= self.total or self.open[address] >= self.per_address:
            self.refused += 1
            return False
        self.open[address] += 1
        self.held += 1
        return True

    def release(self, address: str) -> None:
        """An admitted connection closed."""
        self.held -= 1
        left = self.open[address] - 1
        if left:
            self.open[address] = left
        else:
            del self.open[address]


def room_for(connections: int) -> int:
    """Raise this process's soft limit of open files to hold ``connections`` (up to the hard
    limit: a cap past the limit would fail at accept, not answer its 503); returns the limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = connections + FD_MARGIN
    if soft != resource.RLIM_INFINITY and soft < want:
        soft = want if hard == resource.RLIM_INFINITY else min(want, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    return soft

