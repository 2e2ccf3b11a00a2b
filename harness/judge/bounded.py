"""One GET bounded as a whole: its connection, status line, headers and body all done by one
deadline, its body read up to a cap. httpx's timeouts are per read: a status line sent a byte a
second (121 s at a 5 s timeout) or an endless chunked body (2.5 GB) never trips them. Here every
connect, read and write of the request waits at most until its deadline (``Deadline``, enforced
by the network streams the client's connection pool opens), and the body is read in chunks that
stop at ``BODY_CAP`` bytes.
"""

from __future__ import annotations

import math
import ssl
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import httpcore
import httpx

BODY_CAP = 1 << 20
"""An answer's body is read up to 1 MiB: a limiter's answer (a problem, a page) is far smaller."""


class BodyTooLong(Exception):
    """An answer's body went past ``BODY_CAP``: an endpoint that streams without end."""


@dataclass
class Deadline:
    """When the request in flight must be done (``time.monotonic``); none between requests."""

    at: float = math.inf

    def left(self, timeout: float | None, late: type[Exception] = httpcore.ReadTimeout) -> float:
        """What one network operation may wait: its own timeout, at most the time left."""
        left = self.at - time.monotonic()
        if left <= 0:
            raise late("the request's deadline passed")
        return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    """A connection whose every read and write ends by the request's deadline."""

    def __init__(self, inner: httpcore.NetworkStream, deadline: Deadline) -> None:
        self.inner, self.deadline = inner, deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self.inner.read(max_bytes, self.deadline.left(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.inner.write(buffer, self.deadline.left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self.inner.close()

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                  timeout: float | None = None) -> _Stream:
        tls = self.inner.start_tls(ssl_context, server_hostname, self.deadline.left(timeout, httpcore.ConnectTimeout))
        return _Stream(tls, self.deadline)

    def get_extra_info(self, info: str) -> Any:
        return self.inner.get_extra_info(info)


class _Backend(httpcore.SyncBackend):
    def __init__(self, deadline: Deadline) -> None:
        self.deadline = deadline

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> _Stream:
        inner = super().connect_tcp(host, port, self.deadline.left(timeout, httpcore.ConnectTimeout), local_address,
                                    socket_options)
        return _Stream(inner, self.deadline)


class BoundedClient:
    """An httpx client (from ``local_address`` when given) whose GETs are bounded as a whole."""

    def __init__(self, local_address: str | None) -> None:
        self.deadline = Deadline()
        transport = httpx.HTTPTransport(local_address=local_address)
        transport._pool._network_backend = _Backend(self.deadline)  # httpx takes no backend; its pool does
        self.http = httpx.Client(transport=transport)

    def get(self, url: str, headers: dict[str, str], timeout_s: float) -> httpx.Response:
        """The answer, its body read (up to ``BODY_CAP``: past it, ``BodyTooLong``) within ``timeout_s``
        in all; httpx's errors propagate (a timeout as ``httpx.TimeoutException``)."""
        self.deadline.at = time.monotonic() + timeout_s
        try:
            with self.http.stream("GET", url, headers=headers, timeout=timeout_s) as response:
                size = 0
                for chunk in response.iter_raw():
                    size += len(chunk)
                    if size > BODY_CAP:
                        raise BodyTooLong
                return response
        finally:
            self.deadline.at = math.inf

    def close(self) -> None:
        self.http.close()
