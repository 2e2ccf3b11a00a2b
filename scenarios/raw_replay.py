"""The replay engine of open-loop plans: pre-encoded requests on warm keep-alive gevent sockets.

Built for a low cost per request (docs/campaigns.md, "The replay engine"):
- every request's bytes are encoded before the run (``scenarios.wire``); sending is one
  ``send`` on a socket that is already open;
- one scheduler greenlet walks the groups of the plan and, at each deadline, writes the whole
  group back to back, one idle connection per request: no greenlet is spawned per request and no
  gevent switch happens between the stamp and the send (a send into a socket buffer with room
  does not block), so a burst leaves as one;
- one reader greenlet per connection parses the replies as they come (``ReplyParser``) and
  hands each back to the caller with its times; a connection with no reply pending is idle
  again. When every connection is busy, a new one is opened beside the schedule (the model stays
  open: no concurrency cap below ``MAX_CONNECTIONS``); past that cap requests queue on the
  least busy connection (HTTP/1.1 pipelining);
- times and statuses go into preallocated numpy columns, indexed by the request's place in the
  share; the log is written from them once, when the test stops.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import gevent
import numpy as np
from gevent import socket

from .wire import ReplyParser, encode_request, host_port

MAX_CONNECTIONS = 1000
"""Per target host: at least the largest burst; more only if replies are slower than the offer."""
RECV_BYTES = 65536

OnReply = Callable[[int, int, int], None]
"""(request index, status (0: no answer), reply length): called once per sent request."""


@dataclass(frozen=True)
class Wire:
    """One request of a share, ready to send: its host and its bytes."""

    host: tuple[str, int]
    payload: bytes


def wires(methods_paths_headers: Sequence[tuple[str, str, dict[str, str]]], urls: Sequence[str]) -> list[Wire]:
    """Encode every request once (its URL names the host it goes to)."""
    out = []
    for (method, path, headers), url in zip(methods_paths_headers, urls):
        host = host_port(url)
        out.append(Wire(host, encode_request(method, path, f"{host[0]}:{host[1]}", headers)))
    return out


class _Connection:
    __slots__ = ("pending", "pool", "sock")

    def __init__(self, sock: socket.socket, pool: _Pool) -> None:
        self.sock = sock
        self.pending: deque[int] = deque()
        self.pool = pool


class _Pool:
    """The connections to one host: the idle ones on a stack (the most recently used is the warmest)."""

    __slots__ = ("all", "host", "idle", "opening")

    def __init__(self, host: tuple[str, int]) -> None:
        self.host = host
        self.idle: list[_Connection] = []
        self.all: list[_Connection] = []
        self.opening = 0


class RawReplay:
    """Sends ``wires[i]`` at ``deadlines[i]`` (epoch seconds, grouped: equal deadlines leave
    together), records sent/done/status per request, and calls ``on_reply`` for each answer."""

    def __init__(self, requests: list[Wire], on_reply: OnReply) -> None:
        self.requests = requests
        self.on_reply = on_reply
        n = len(requests)
        self.sent = np.full(n, np.nan)
        self.done = np.full(n, np.nan)
        self.status = np.zeros(n, dtype=np.int32)
        self.outstanding = 0
        self.pools: dict[tuple[str, int], _Pool] = {}
        self.readers: list[gevent.Greenlet] = []

    # -- connections --------------------------------------------------------------------------

    def _pool(self, host: tuple[str, int]) -> _Pool:
        pool = self.pools.get(host)
        if pool is None:
            pool = self.pools[host] = _Pool(host)
        return pool

    def _open(self, pool: _Pool, read: bool = True) -> _Connection:
        sock = socket.create_connection(pool.host)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = _Connection(sock, pool)
        pool.all.append(conn)
        if read:
            self.readers.append(gevent.spawn(self._read, conn))
        return conn

    def warm(self, per_host: dict[tuple[str, int], int], path: str = "/healthz") -> list[int]:
        """Open ``per_host[host]`` connections to each host and send one ``path`` on each (the
        server's side of the connection is warm too). Returns the warm-up replies' statuses."""
        probes = []
        for host, count in per_host.items():
            pool = self._pool(host)
            payload = encode_request("GET", path, f"{host[0]}:{host[1]}", {})
            for _ in range(min(count, MAX_CONNECTIONS)):
                probes.append((self._open(pool, read=False), payload))
        for conn, payload in probes:
            conn.sock.sendall(payload)
        statuses = []
        for conn, _ in probes:  # read here; the connection's reader starts once it is warm
            parser = ReplyParser()
            replies: list[tuple[int, int]] = []
            while not replies:
                data = conn.sock.recv(RECV_BYTES)
                if not data:
                    raise OSError(f"{conn.pool.host} closed a warm-up connection")
                replies = parser.feed(data)
            statuses.append(replies[0][0])
            self.readers.append(gevent.spawn(self._read, conn))
            conn.pool.idle.append(conn)
        return statuses

    # -- sending ------------------------------------------------------------------------------

    def send_group(self, indexes: Sequence[int]) -> None:
        """Write these requests now, back to back: stamp, send, next; no switch in between."""
        now = time.time
        for i in indexes:
            wire = self.requests[i]
            pool = self.pools.get(wire.host) or self._pool(wire.host)
            if pool.idle:
                conn = pool.idle.pop()
            elif len(pool.all) + pool.opening < MAX_CONNECTIONS:
                pool.opening += 1
                self.outstanding += 1
                gevent.spawn(self._send_on_new, pool, i)
                continue
            else:
                conn = min(pool.all, key=lambda c: len(c.pending))
            self.outstanding += 1
            conn.pending.append(i)
            self.sent[i] = now()
            try:
                conn.sock.sendall(wire.payload)
            except OSError:
                self._lost(conn)

    def _send_on_new(self, pool: _Pool, i: int) -> None:
        try:
            conn = self._open(pool)
        except OSError:
            self.sent[i] = self.done[i] = time.time()
            self._answer(i, 0, 0)
            return
        finally:
            pool.opening -= 1
        conn.pending.append(i)
        self.sent[i] = time.time()
        try:
            conn.sock.sendall(self.requests[i].payload)
        except OSError:
            self._lost(conn)

    # -- replies ------------------------------------------------------------------------------

    def _answer(self, i: int, status: int, length: int) -> None:
        self.outstanding -= 1
        self.status[i] = status
        self.on_reply(i, status, length)

    def _read(self, conn: _Connection) -> None:
        """One per connection: every reply as it completes, in order (HTTP/1.1 answers in order)."""
        parser = ReplyParser()
        sock, pending, done = conn.sock, conn.pending, self.done
        try:
            while True:
                data = sock.recv(RECV_BYTES)
                if not data:
                    break
                if not pending:  # a warm-up reply is read by ``warm``; anything else here is stray
                    continue
                now = time.time()
                for status, length in parser.feed(data):
                    i = pending.popleft()
                    done[i] = now
                    self._answer(i, status, length)
                if not pending and not parser.closing:
                    conn.pool.idle.append(conn)
                if parser.closing:
                    break
        except (OSError, ValueError):
            pass
        self._lost(conn)

    def _lost(self, conn: _Connection) -> None:
        """The connection is gone: what it still owed is answered with status 0 (no answer)."""
        pool = conn.pool
        if conn in pool.all:
            pool.all.remove(conn)
        if conn in pool.idle:
            pool.idle.remove(conn)
        now = time.time()
        while conn.pending:
            i = conn.pending.popleft()
            self.done[i] = now
            self._answer(i, 0, 0)
        conn.sock.close()

    def close(self) -> None:
        """Close every connection (their readers end)."""
        for pool in self.pools.values():
            for conn in list(pool.all):
                conn.sock.close()
        gevent.killall(self.readers, block=False)
