"""HTTP/1.1 as the replay engine speaks it: requests encoded once, before the run, and replies
parsed only as far as the client log needs (status, where the reply ends, whether the server
closes, the limit fields' lines as they came). Pure bytes in, values out: tested exactly, no sockets.

Why not a full client: an HTTP library builds headers, a request object and a response object
for every request, and that, not the network, was the generator's ceiling. A plan's requests are
known before the run, so their bytes are too; the target's replies are ours (uvicorn: a status
line, headers with Content-Length, a small body)."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

from contract.limit_headers import limit_lines

HEADER_END = b"\r\n\r\n"
Reply = tuple[int, int, str | None]
"""A reply's status, its total length (head and body) and its limit fields' lines (or None)."""


def host_port(url: str) -> tuple[str, int]:
    """``http://127.0.0.1:8000`` -> ("127.0.0.1", 8000)."""
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise ValueError(f"the replay engine speaks plain http to a host: {url!r}")
    return parts.hostname, parts.port or 80


def encode_request(method: str, path: str, host: str, headers: Mapping[str, str]) -> bytes:
    """The request's bytes: keep-alive (HTTP/1.1's default), no body (a POST says so)."""
    lines = [f"{method} {path} HTTP/1.1", f"host: {host}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    if method in ("POST", "PUT", "PATCH"):
        lines.append("content-length: 0")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


class ReplyParser:
    """Splits a connection's byte stream into replies. ``feed`` returns, for every reply now
    complete, its ``Reply``; a reply split over reads waits for the rest. ``closing`` turns true once a reply said ``Connection: close``."""

    __slots__ = ("buf", "closing")

    def __init__(self) -> None:
        self.buf = b""
        self.closing = False

    def feed(self, data: bytes) -> list[Reply]:
        buf = self.buf + data if self.buf else data
        out: list[Reply] = []
        start = 0
        while True:
            end = buf.find(HEADER_END, start)
            if end < 0:
                break
            head = buf[start:end]
            status, length, fields = self._head(head)
            total = end + 4 + length
            if total > len(buf):
                break
            out.append((status, total - start, fields))
            start = total
        self.buf = buf[start:]
        return out

    def _head(self, head: bytes) -> Reply:
        """Status, body length (no Content-Length: no body, as for 204) and limit fields of one
        reply head; the fields' lines are split out only when the head names one."""
        line_end = head.find(b"\r\n")
        first = head if line_end < 0 else head[:line_end]
        try:
            status = int(first.split(b" ", 2)[1])
        except (IndexError, ValueError):
            raise ValueError(f"not an HTTP reply: {first[:80]!r}") from None
        length = 0
        lower = head.lower()
        at = lower.find(b"\r\ncontent-length:")
        if at >= 0:
            value_end = lower.find(b"\r\n", at + 2)
            length = int(lower[at + 17:value_end if value_end >= 0 else None])
        if b"\r\ntransfer-encoding:" in lower:
            raise ValueError("chunked replies are not spoken by the replay engine (the target sends Content-Length)")
        if b"\r\nconnection: close" in lower:
            self.closing = True
        fields = _limit_fields(head) if b"ratelimit" in lower or b"\r\nretry-after:" in lower else None
        return status, length, fields


def _limit_fields(head: bytes) -> str | None:
    """The limit fields' lines of a reply head (contract.limit_headers.limit_lines)."""
    lines = head.decode("latin-1").split("\r\n")[1:]
    return limit_lines((name, value.strip()) for name, _, value in (line.partition(":") for line in lines))
