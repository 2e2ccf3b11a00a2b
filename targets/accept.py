"""The accept loop a target serves with: every pending connection accepted each time the listener
is readable, however busy the event loop is.

Why not the loop's own server (``loop.create_server``, which uvicorn uses): under uvloop it
accepts one connection per loop iteration (traced with ``strace -e accept4,epoll_pwait``: one
``accept4`` after each ``epoll_pwait``), and an iteration that serves 1,000 busy keep-alive
connections lasts 100-400 ms here, so during a flood the listen queue held 365-900 connections,
accepted at a few per second, and a new client waited 11 s for its first answer. Here the
listening socket is watched with ``add_reader`` and drained (up to ``ACCEPTS_PER_WAKE``) on every
wake; each accepted socket is handed to the loop's transport with the same protocol factory, so
the protocol (its bounds and connection caps) is unchanged.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable
from contextlib import suppress

from .connection_caps import REFUSAL, ConnectionCaps

ACCEPTS_PER_WAKE = 512
"""A bound on one wake's work, so a connect flood cannot hold the loop either; the rest wait one
iteration."""

log = logging.getLogger(__name__)


class DrainingListener:
    """Serves ``sock`` (bound and listening) on the running loop; ``close`` stops accepting.
    Shaped as the part of ``asyncio.Server`` uvicorn's shutdown calls (``close``, ``wait_closed``)."""

    def __init__(self, sock: socket.socket, protocol_factory: Callable[[], asyncio.Protocol], backlog: int,
                 caps: ConnectionCaps) -> None:
        self._loop = asyncio.get_running_loop()
        self._sock = sock
        self._factory = protocol_factory
        self._caps = caps
        self._handoffs: set[asyncio.Task] = set()
        sock.setblocking(False)
        sock.listen(backlog)
        self._loop.add_reader(sock.fileno(), self._drain)

    def _drain(self) -> None:
        for _ in range(ACCEPTS_PER_WAKE):
            try:
                conn, peer = self._sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # out of descriptors (EMFILE): the next wake tries again
                log.warning("accept failed: %s", exc)
                return
            if not self._caps.admit(peer[0]):
                refuse(conn)
                continue
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            task = self._loop.create_task(self._loop.connect_accepted_socket(self._factory, conn))
            self._handoffs.add(task)
            task.add_done_callback(self._handed)

    def _handed(self, task: asyncio.Task) -> None:
        self._handoffs.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("an accepted connection could not be served: %s", task.exception())

    def close(self) -> None:
        if self._sock.fileno() >= 0:
            self._loop.remove_reader(self._sock.fileno())

    async def wait_closed(self) -> None:
        if self._handoffs:
            await asyncio.wait(list(self._handoffs))


def refuse(conn: socket.socket) -> None:
    """The pre-encoded 503 and the close, on the accepted socket itself (it fits the send buffer)."""
    with conn, suppress(OSError):
        conn.setblocking(False)
        conn.send(REFUSAL)
        conn.shutdown(socket.SHUT_WR)
        conn.recv(65536)  # what the client sent already: unread, the close would be a reset
