"""Raw-socket HTTP for the hostile-input tests and benchmark: exact bytes out, answers as they come.

A client library would refuse (or repair) most of what these tests send, so requests are bytes
and answers are split by their Content-Length (every answer a target writes carries one).
"""

from __future__ import annotations

import re
import socket
from contextlib import suppress
from dataclasses import dataclass, field

_HEAD = re.compile(rb"HTTP/1\.[01] (\d{3})[^\r\n]*\r\n((?:[^\r\n]+\r\n)*)\r\n")
_LENGTH = re.compile(rb"^content-length:\s*(\d+)\s*$", re.I | re.M)


@dataclass
class Exchange:
    statuses: list[int] = field(default_factory=list)
    heads: list[bytes] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)
    closed: bool = False
    """The server closed the connection (EOF or reset)."""
    timed_out: bool = False
    """A read waited the whole socket timeout for a byte."""
    rest: bytes = b""
    """Bytes after the last whole answer."""


def split_answers(buf: bytes, into: Exchange) -> bytes:
    """Move every whole answer at the front of ``buf`` into ``into``; the remainder is returned."""
    while True:
        m = _HEAD.match(buf)
        if m is None:
            return buf
        length = _LENGTH.search(m.group(2))
        end = m.end() + (int(length.group(1)) if length else 0)
        if len(buf) < end:
            return buf
        into.statuses.append(int(m.group(1)))
        into.heads.append(m.group(2))
        into.bodies.append(buf[m.end():end])
        buf = buf[end:]


def connect(port: int, timeout_s: float = 1.0, source: str | None = None) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout_s,
                                    source_address=(source, 0) if source else None)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def read_answers(sock: socket.socket, answers: int) -> Exchange:
    """Read until ``answers`` whole answers have arrived, the server closes, or a read waits the
    socket's whole timeout (``timed_out``)."""
    out, buf = Exchange(), b""
    while len(out.statuses) < answers or answers == 0:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            out.timed_out = True
            break
        except OSError:  # reset
            out.closed = True
            break
        if not chunk:
            out.closed = True
            break
        buf = split_answers(buf + chunk, out)
    out.rest = buf
    return out


def exchange(port: int, data: bytes, answers: int = 1, timeout_s: float = 1.0, source: str | None = None) -> Exchange:
    """Send ``data`` on a new connection and read ``answers`` answers (0: until close or timeout)."""
    with connect(port, timeout_s, source) as sock:
        with suppress(OSError):  # the server answered and closed while we were still sending
            sock.sendall(data)
        return read_answers(sock, answers)


def request(method: str = "GET", path: str = "/api/items", body: bytes = b"", **headers: str) -> bytes:
    """One well-formed request (headers given as keyword arguments, ``_`` for ``-``)."""
    lines = [f"{method} {path} HTTP/1.1", "Host: t", *(f"{k.replace('_', '-')}: {v}" for k, v in headers.items())]
    if body or method == "POST":
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body
