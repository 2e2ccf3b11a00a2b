"""The URLs the user names (the judge's endpoint, a url peer, ``validate --url``) checked where
they enter, as ``paths`` checks the paths: a port out of range was "connection refused" at the
first request (or an exception from deep in httpx), and a CR or LF would split the request the
URL is sent in."""

from __future__ import annotations

from urllib.parse import urlsplit

from .errors import BadInput
from .params import Bounds

PORTS = Bounds(1, 65535)
"""A TCP port one can connect to (0 asks the kernel for any port: nothing listens there)."""


def check_http_url(url: str, what: str, error: type[BadInput] = BadInput) -> str:
    """``url`` as given, once it is ``http(s)://HOST[:PORT]...`` with the port in ``PORTS`` and
    no space or control character; else ``error`` naming ``what`` and the problem."""
    if any(c <= " " or c == "\x7f" for c in url):
        raise error(f"{what} {url!r}: contains a space or a control character (CR, LF, tab, ...): a URL has none")
    try:
        parts = urlsplit(url)
    except ValueError:  # an unbalanced IPv6 bracket
        raise error(f"{what} {url!r}: expected http://HOST[:PORT]/PATH") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise error(f"{what} {url!r}: expected http://HOST[:PORT]/PATH")
    host_port = parts.netloc.rpartition("@")[2].rpartition("]")[2]  # an IPv6 address is in brackets
    text = host_port.rpartition(":")[2] if ":" in host_port else ""  # empty: the scheme's default
    if text:
        digits = text.removeprefix("-")
        if not (digits.isascii() and digits.isdigit()):
            raise error(f"{what} {url!r}: port {text!r} is not a number")
        PORTS.check(f"{what} {url!r}: port", int(text), error)
    return url
