"""Locust HTTP sessions that send from a source address of their own: the closed-loop replay's
clients (``ReactiveUser``), one session per address (``scenarios.addresses``), each keeping its
own keep-alive connections.

geventhttpclient opens its sockets in ``ConnectionPool._create_tcp_socket``; the one change is
that each socket is bound to the session's address before it connects.
"""

from __future__ import annotations

import contextlib
from typing import Any

from locust import FastHttpUser
from locust.contrib.fasthttp import FastHttpSession

IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT = 0, 24
"""Linux: the port is taken at connect, per destination (scenarios/raw_replay.py says why)."""


def _bind(pool: Any, source: str) -> None:
    """Every socket ``pool`` opens from now on leaves from ``source``."""
    if getattr(pool, "bound_to", None) == source:
        return
    create = pool._create_tcp_socket

    def bound(family: int, socktype: int, protocol: int) -> Any:
        sock = create(family, socktype, protocol)
        sock.setsockopt(IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, 1)
        sock.bind((source, 0))
        return sock

    pool._create_tcp_socket = bound
    pool.bound_to = source


class BoundSessions:
    """One ``FastHttpSession`` per source address, made as ``FastHttpUser`` makes its own."""

    def __init__(self, user: FastHttpUser) -> None:
        self.user = user
        self.sessions: dict[str, FastHttpSession] = {}

    def get(self, source: str | None) -> FastHttpSession:
        """The session of ``source`` (None: the machine's own address)."""
        session = self.sessions.get(source)
        if session is None:
            session = self.sessions[source] = self._session(source)
        return session

    def warm(self, source: str | None, url: str) -> None:
        """One connection from ``source`` to ``url``'s host opened before the plan, nothing sent
        on it (a request from a client's address is the client's); more open as its requests need."""
        pool = self.get(source).client.clientpool.get_client(url)._connection_pool
        with contextlib.suppress(OSError):  # its first request connects, and says what failed
            pool.return_socket(pool.get_socket())

    def _session(self, source: str | None) -> FastHttpSession:
        user = self.user
        session = FastHttpSession(
            base_url=user.host, request_event=user.environment.events.request, user=user,
            network_timeout=user.network_timeout, connection_timeout=user.connection_timeout,
            max_redirects=user.max_redirects, max_retries=user.max_retries, insecure=user.insecure,
            concurrency=user.concurrency)
        if source is None:
            return session
        clients = session.client.clientpool
        get_client = clients.get_client

        def bound_client(url: Any) -> Any:
            client = get_client(url)
            _bind(client._connection_pool, source)
            return client

        clients.get_client = bound_client
        return session
