"""The replay engine of open-loop plans: pre-encoded requests on warm keep-alive sockets, one loop.

Built for a low cost per request (docs/campaigns.md, "The replay engine"):
- every request's bytes are encoded before the run (``scenarios.wire``); sending is one
  non-blocking ``send`` on a socket that is already open;
- the caller walks the groups of the plan and, at each deadline, writes the whole group back to
  back, one idle connection per request, with no switch between the stamp and the send, so a
  burst leaves as one; while it waits for a deadline the engine reads the replies
  (``ReplyParser``) of every connection that has some, and a connection with no reply pending is
  idle again. When every connection is busy, a new one is opened beside the schedule (the model
  stays open: no concurrency cap below ``MAX_CONNECTIONS``); past that cap requests queue on the
  least busy connection (HTTP/1.1 pipelining);
- times and statuses go into preallocated numpy columns, indexed by the request's place in the
  share; the log is written from them once, when the test stops.

Each request leaves from its client's source address (``scenarios.addresses``): a pool of
connections per (host, address), each socket bound to its address before it connects. Warming a
client's pool opens its connections and sends nothing on them (a request from a client's address
is the client's, and may spend its quota); the one request that asks whether the side is up
leaves from the warm-up's own address.

Why one epoll of its own rather than gevent's sockets (a departure from Locust's gevent world,
which it still lives in): a gevent socket that waits for a reply starts a libev watcher, switches
to the hub and back and stops the watcher, and it first tries a ``recv`` that fails; with one
reply per wait, that cost more than the rest of the request (64% of the generator's samples at
500 requests/s were gevent's hub). Here the sockets stay registered in one ``epoll`` for their
lifetime, one ``poll`` returns every connection with replies, and each is read once. The loop
blocks in that ``poll`` for at most ``BLOCK_S`` and yields to gevent at least every ``YIELD_S``,
so Locust's own greenlets (stats, heartbeats, the stop) keep running beside it.
"""

from __future__ import annotations

import errno
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from select import EPOLLERR, EPOLLHUP, EPOLLIN, EPOLLOUT

import gevent
import numpy as np
from gevent import monkey

from .wire import ReplyParser, encode_request, host_port

# the originals: Locust's gevent patches the socket module and removes select.epoll
_socket = monkey.get_original("socket", ["socket", "AF_INET", "SOCK_STREAM", "IPPROTO_TCP", "TCP_NODELAY",
                                         "SOL_SOCKET", "SO_ERROR", "getaddrinfo", "IPPROTO_IP"])
_socket_class, AF_INET, SOCK_STREAM, IPPROTO_TCP, TCP_NODELAY, SOL_SOCKET, SO_ERROR, _getaddrinfo, IPPROTO_IP = _socket
IP_BIND_ADDRESS_NO_PORT = 24
"""Linux: a socket bound to an address takes its port at connect, per destination (not at bind,
one port per address for every destination)."""
_epoll = monkey.get_original("select", "epoll")

MAX_CONNECTIONS = 1000
"""Per target host and source address: at least the largest burst; more only if replies are
slower than the offer."""
RECV_BYTES = 65536
BLOCK_S = 0.05
"""The longest the loop blocks in its ``poll`` before it lets gevent run (with nothing due: an
idle worker wakes 20 times a second; a wake-up costs 60-80 us of CPU on this machine)."""
YIELD_S = 0.002
"""While busy, the loop lets gevent run at least this often (a burst's last millisecond excepted)."""
SPIN_S = 0.001
"""A burst's deadline is kept by polling without blocking for its last millisecond (``poll``
and gevent's timers wake up to ~1 ms late)."""
CONNECT_TIMEOUT_S = 10.0

OnReply = Callable[[int, int, int], None]
"""(request index, status (0: no answer), reply length): called once per sent request."""
WARM = -1
"""The pending entry of a warm-up probe (not a request of the share)."""


@dataclass(frozen=True, eq=False)
class Origin:
    """Where requests go and where they leave from: one pool of connections. One object per
    pair (``wires`` shares them), hashed by identity: the send path looks its pool up per request."""

    host: tuple[str, int]
    source: str | None = None
    """The source address its sockets are bound to (None: the kernel's choice)."""


@dataclass(frozen=True)
class Wire:
    """One request of a share, ready to send: its origin and its bytes."""

    origin: Origin
    payload: bytes


def wires(methods_paths_headers: Sequence[tuple[str, str, dict[str, str]]], urls: Sequence[str],
          sources: Sequence[str | None] | None = None) -> list[Wire]:
    """Encode every request once (its URL names the host it goes to; ``sources``, the address it
    leaves from)."""
    origins: dict[tuple[tuple[str, int], str | None], Origin] = {}
    out = []
    for n, ((method, path, headers), url) in enumerate(zip(methods_paths_headers, urls)):
        host = host_port(url)
        source = sources[n] if sources is not None else None
        origin = origins.get((host, source)) or origins.setdefault((host, source), Origin(host, source))
        out.append(Wire(origin, encode_request(method, path, f"{host[0]}:{host[1]}", headers)))
    return out


def connections_needed(requests: Sequence[Wire], groups: Sequence[range], span_s: float, latency_s: float,
                       spare: int) -> dict[Origin, int]:
    """Per origin, the connections its share needs warm: its most requests in one group, its rate
    times ``latency_s`` in flight, and ``spare`` shared among the host's origins (a thousand
    clients' addresses warm about one each: a target caps a process's connections at 4,096, and
    more open on demand)."""
    most: dict[Origin, int] = {}
    total: dict[Origin, int] = {}
    for group in groups:
        counts: dict[Origin, int] = {}
        for i in group:
            origin = requests[i].origin
            counts[origin] = counts.get(origin, 0) + 1
        for origin, n in counts.items():
            total[origin] = total.get(origin, 0) + n
            if n > most.get(origin, 0):
                most[origin] = n
    per_host: dict[tuple[str, int], int] = {}
    for origin in most:
        per_host[origin.host] = per_host.get(origin.host, 0) + 1
    return {origin: most[origin] + int(total[origin] / span_s * latency_s) + spare // per_host[origin.host]
            for origin in most}


class _Connection:
    __slots__ = ("connecting", "fd", "out", "parser", "pending", "pool", "sock", "unsent")

    def __init__(self, sock: _socket_class, pool: _Pool) -> None:
        self.sock = sock
        self.fd = sock.fileno()
        self.pool = pool
        self.pending: deque[int] = deque()
        """Requests written (or to be written once connected) whose replies have not come."""
        self.parser = ReplyParser()
        self.connecting = True
        self.unsent: list[int] = []
        """Requests waiting for the connection to open (stamped when written)."""
        self.out = b""
        """Bytes the socket buffer had no room for."""


class _Pool:
    """The connections of one origin: the idle ones on a stack (the most recently used is the warmest)."""

    __slots__ = ("address", "all", "host", "idle", "source")

    def __init__(self, origin: Origin) -> None:
        self.host, self.source = origin.host, origin.source
        self.address = _getaddrinfo(self.host[0], self.host[1], AF_INET, SOCK_STREAM)[0][4]
        self.idle: list[_Connection] = []
        self.all: list[_Connection] = []


class RawReplay:
    """Sends ``requests[i]`` when asked (``send_group``), reads replies while it waits
    (``wait_until``, ``drain``), records sent/done/status/limit fields per request, and calls ``on_reply``
    for each answer."""

    def __init__(self, requests: list[Wire], on_reply: OnReply) -> None:
        self.requests = requests
        self.on_reply = on_reply
        n = len(requests)
        self.sent = np.full(n, np.nan)
        self.done = np.full(n, np.nan)
        self.status = np.zeros(n, dtype=np.int32)
        self.fields: list[str | None] = [None] * n
        """Each answer's limit fields' lines (``scenarios.wire.Reply``), None where it had none."""
        self.outstanding = 0
        self.pools: dict[Origin, _Pool] = {}
        self._poller = _epoll()
        self._by_fd: dict[int, _Connection] = {}
        self._warm: list[int] = []
        """Statuses of the warm-up replies so far."""
        self._warm_lost = 0
        self._probe_path = "/healthz"
        self._yielded = time.monotonic()

    # -- connections --------------------------------------------------------------------------

    def _pool(self, origin: Origin) -> _Pool:
        pool = self.pools.get(origin)
        if pool is None:
            pool = self.pools[origin] = _Pool(origin)
        return pool

    def _open(self, pool: _Pool) -> _Connection:
        """A non-blocking connect from the pool's source address; the loop finishes it (``_connected``)."""
        sock = _socket_class(AF_INET, SOCK_STREAM)
        sock.setblocking(False)
        sock.setsockopt(IPPROTO_TCP, TCP_NODELAY, 1)
        if pool.source is not None:
            sock.setsockopt(IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, 1)
            try:
                sock.bind((pool.source, 0))
            except OSError:
                sock.close()
                raise
        conn = _Connection(sock, pool)
        code = sock.connect_ex(pool.address)
        if code not in (0, errno.EINPROGRESS):
            sock.close()
            raise OSError(code, f"cannot connect to {pool.host}: {errno.errorcode.get(code, code)}")
        pool.all.append(conn)
        self._by_fd[conn.fd] = conn
        self._poller.register(conn.fd, EPOLLOUT)
        return conn

    def _connected(self, conn: _Connection) -> None:
        code = conn.sock.getsockopt(SOL_SOCKET, SO_ERROR)
        if code:
            self._lost(conn)
            return
        conn.connecting = False
        self._poller.modify(conn.fd, EPOLLIN)
        if not conn.pending:  # warmed without a request: ready for one
            conn.pool.idle.append(conn)
            return
        now = time.time()
        unsent, conn.unsent = conn.unsent, []
        for i in unsent:
            if conn.fd not in self._by_fd:  # lost on a write: _lost answered the rest
                return
            if i >= 0:
                self.sent[i] = now
            self._write(conn, self.requests[i].payload if i >= 0 else self._probe(conn.pool))

    def warm(self, per_origin: dict[Origin, int], path: str | None = "/healthz") -> list[int]:
        """Open ``per_origin[origin]`` connections from each origin and send one ``path`` on each
        (the server's side of the connection is warm too), or with no ``path`` only open them (a
        client's own connections: nothing is sent from its address before its plan). Returns the
        warm-up replies' statuses; raises OSError if a connection could not be opened, or closed
        before its reply."""
        self._probe_path = path or ""
        self._warm = []
        self._warm_lost = 0
        opened = []
        for origin, count in per_origin.items():
            pool = self._pool(origin)
            for _ in range(min(count, MAX_CONNECTIONS - len(pool.all))):
                conn = self._open(pool)
                opened.append(conn)
                if path is not None:
                    conn.pending.append(WARM)
                    conn.unsent.append(WARM)
        if path is None:  # best effort: one that failed or was closed is opened again when needed
            self._await_connected(opened)
            return []
        expected = len(opened)
        deadline = time.time() + CONNECT_TIMEOUT_S
        while len(self._warm) + self._warm_lost < expected and time.time() < deadline:
            self._poll(BLOCK_S)
        if self._warm_lost or len(self._warm) < expected:
            raise OSError(f"{self._warm_lost} of {expected} warm-up connections failed, "
                          f"{expected - len(self._warm) - self._warm_lost} unanswered")
        return self._warm

    def _await_connected(self, opened: list[_Connection]) -> None:
        """Until every one of ``opened`` is open or gone (at most ``CONNECT_TIMEOUT_S``)."""
        deadline = time.time() + CONNECT_TIMEOUT_S
        waiting = opened
        while waiting and time.time() < deadline:
            self._poll(BLOCK_S)
            waiting = [c for c in waiting if c.connecting and c.fd in self._by_fd]

    def _probe(self, pool: _Pool) -> bytes:
        return encode_request("GET", self._probe_path, f"{pool.host[0]}:{pool.host[1]}", {})

    # -- sending ------------------------------------------------------------------------------

    def send_group(self, indexes: Sequence[int]) -> None:
        """Write these requests now, back to back: stamp, send, next; no switch in between."""
        now = time.time
        for i in indexes:
            wire = self.requests[i]
            pool = self.pools.get(wire.origin) or self._pool(wire.origin)
            self.outstanding += 1
            if pool.idle:
                conn = pool.idle.pop()
            elif len(pool.all) < MAX_CONNECTIONS:
                try:
                    conn = self._open(pool)
                except OSError:
                    self.sent[i] = self.done[i] = now()
                    self._answer(i, 0, 0)
                    continue
                conn.pending.append(i)
                conn.unsent.append(i)  # stamped and written once connected
                continue
            else:
                conn = min(pool.all, key=lambda c: len(c.pending))
            conn.pending.append(i)
            if conn.connecting:
                conn.unsent.append(i)
                continue
            self.sent[i] = now()
            self._write(conn, wire.payload)

    def _write(self, conn: _Connection, payload: bytes) -> None:
        if conn.out:  # earlier bytes are still waiting for room: these go after them
            conn.out += payload
            return
        try:
            n = conn.sock.send(payload)
        except BlockingIOError:
            n = 0
        except OSError:
            self._lost(conn)
            return
        if n < len(payload):
            conn.out = payload[n:]
            self._poller.modify(conn.fd, EPOLLIN | EPOLLOUT)

    def _flush(self, conn: _Connection) -> None:
        try:
            n = conn.sock.send(conn.out)
        except BlockingIOError:
            return
        except OSError:
            self._lost(conn)
            return
        conn.out = conn.out[n:]
        if not conn.out:
            self._poller.modify(conn.fd, EPOLLIN)

    # -- the loop -----------------------------------------------------------------------------

    def wait_until(self, t: float, spin: bool = False) -> None:
        """Read replies until ``t`` (epoch seconds); ``spin``: keep the last ``SPIN_S`` without
        blocking or yielding (a burst's deadline). Past ``t`` already (a worker behind its plan):
        read what has come without waiting, and let gevent run if ``YIELD_S`` has passed, so a
        worker that cannot keep up still answers its master's heartbeats (a loop that only sent
        starved them: the master marked its workers missing and stopped the test) and frees the
        connections its replies release instead of opening new ones."""
        now = time.time
        if t <= now():  # behind already (not a deadline reached while waiting: a burst then leaves at once)
            self._poll(0.0)
            return
        while True:
            remaining = t - now()
            if remaining <= 0:
                return
            if spin and remaining <= SPIN_S:
                self._poll(0.0, may_yield=False)
            else:
                self._poll(min(remaining - SPIN_S if spin else remaining, BLOCK_S))

    def drain(self) -> None:
        """Read replies until every sent request has its answer."""
        while self.outstanding:
            self._poll(BLOCK_S)

    def _poll(self, timeout: float, may_yield: bool = True) -> None:
        if may_yield and time.monotonic() - self._yielded >= YIELD_S:
            gevent.sleep(0)  # Locust's greenlets: stats, heartbeats, the stop (which kills this one)
            self._yielded = time.monotonic()
        # epoll waits whole milliseconds, rounded up: a single request leaves up to 1 ms late, and
        # at high rates one wake-up sends every group of that millisecond (a wake-up per group,
        # waited to the microsecond, cost 30-40% more CPU per request at 4,000-8,000/s)
        events = self._poller.poll(timeout)
        if not events:
            return
        by_fd = self._by_fd
        for fd, mask in events:
            conn = by_fd.get(fd)
            if conn is None:
                continue
            if conn.connecting:
                self._connected(conn)
                continue
            if mask & (EPOLLIN | EPOLLERR | EPOLLHUP):
                self._read(conn)
            if mask & EPOLLOUT and conn.out and conn.fd in by_fd:
                self._flush(conn)

    def _read(self, conn: _Connection) -> None:
        """Every reply now complete on this connection, in order (HTTP/1.1 answers in order)."""
        try:
            data = conn.sock.recv(RECV_BYTES)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._lost(conn)
            return
        pending = conn.pending
        if not pending:  # nothing asked on it: a stray byte stream, not a reply of ours
            return
        try:
            replies = conn.parser.feed(data)
        except ValueError:
            self._lost(conn)
            return
        now = time.time()
        for status, length, fields in replies:
            if not pending:  # more replies than requests: a server's stray bytes, not ours to count
                break
            i = pending.popleft()
            if i == WARM:
                self._warm.append(status)
                continue
            self.done[i] = now
            self.fields[i] = fields
            self._answer(i, status, length)
        if conn.parser.closing:
            self._lost(conn)
        elif not pending:
            conn.pool.idle.append(conn)

    def _answer(self, i: int, status: int, length: int) -> None:
        self.outstanding -= 1
        self.status[i] = status
        self.on_reply(i, status, length)

    def _lost(self, conn: _Connection) -> None:
        """The connection is gone: what it still owed is answered with status 0 (no answer)."""
        pool = conn.pool
        if self._by_fd.pop(conn.fd, None) is not None:
            self._poller.unregister(conn.fd)
        if conn in pool.all:
            pool.all.remove(conn)
        if conn in pool.idle:
            pool.idle.remove(conn)
        now = time.time()
        while conn.pending:
            i = conn.pending.popleft()
            if i == WARM:
                self._warm_lost += 1
                continue
            if np.isnan(self.sent[i]):
                self.sent[i] = now
            self.done[i] = now
            self._answer(i, 0, 0)
        conn.unsent.clear()
        conn.sock.close()

    def close(self) -> None:
        """Close every connection and the poller."""
        for pool in self.pools.values():
            for conn in pool.all:
                conn.sock.close()
        self._by_fd.clear()
        self._poller.close()
