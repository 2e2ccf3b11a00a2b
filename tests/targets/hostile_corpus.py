"""A generated corpus of hostile requests (fixed seed: the same cases every run).

Each case is the exact bytes a client sends on a fresh connection and how many answers (or a
close) it is owed: ``answers >= 1`` for bytes that hold complete requests, 0 where the bytes end
inside a request by construction (a declared body never sent, a head cut short), which the server
is right to wait on. Families: request lines, header names and values, X-Forwarded-For, identity
headers, Content-Length, chunked bodies, pipelining, login bodies (nested, malformed, oversized),
upgrades and odd request forms, random bytes, and byte-level mutations of valid requests.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass

SEED = 20140
CASES = 1200


@dataclass(frozen=True)
class Case:
    name: str
    data: bytes
    answers: int


CRLF = b"\r\n"
ROUTES = [(b"GET", b"/api/items"), (b"GET", b"/api/search"), (b"POST", b"/api/reports"), (b"POST", b"/login"),
          (b"GET", b"/healthz"), (b"GET", b"/metrics"), (b"GET", b"/nowhere")]


def head(line: bytes, headers: list[bytes]) -> bytes:
    return line + CRLF + b"".join(h + CRLF for h in headers) + CRLF


def valid(rng: random.Random, body: bytes = b"") -> bytes:
    method, path = rng.choice(ROUTES)
    headers = [b"Host: t", b"X-Api-Key: k%d" % rng.randrange(50)]
    if method == b"POST" or body:
        headers.append(b"Content-Length: %d" % len(body))
    return head(method + b" " + path + b" HTTP/1.1", headers) + body


def junk(rng: random.Random, n: int) -> bytes:
    return bytes(rng.randrange(256) for _ in range(n))


def request_lines(rng: random.Random) -> Case:
    method = rng.choice([b"GET", b"POST", b"get", b"G\x00T", b"", b"GET GET", b"X" * 200, b"CONNECT", b"OPTIONS",
                         b"DELETE", b"PATCH", b"TRACE", b"PROPFIND", b"\xffGET", b"GET\t"])
    path = rng.choice([b"/api/items", b"*", b"http://evil.example/api/items", b"/%00", b"/%zz", b"/%C0%AF",
                       b"/" + b"a" * rng.randrange(1, 20000), b"/api/items?" + b"q=1&" * rng.randrange(1, 3000),
                       b"//", b"/api/items#frag", b"/../../etc/passwd", b"/a b", b"/\xe9\xff", b"", b"api/items",
                       b"/login", b"/api/items;x=1", b"/\x7f"])
    version = rng.choice([b"HTTP/1.1", b"HTTP/1.0", b"HTTP/0.9", b"HTTP/2.0", b"HTTP/1.2", b"HTTP/11", b"", b"http/1.1",
                          b"HTTP/1.1 extra", b"HTTP/1.1\x00", b"HTTP/9.9", b"HTTP/"])
    return Case("request-line", head(method + b" " + path + b" " + version, [b"Host: t"]), 1)


def header_fields(rng: random.Random) -> Case:
    choice = rng.randrange(12)
    if choice == 0:
        fields = [junk(rng, rng.randrange(1, 40)) + b": v"]
    elif choice == 1:
        fields = [b": empty-name", b"X-A : space-before-colon"][rng.randrange(2):]
    elif choice == 2:
        fields = [b"X-Folded: v", b"  continued", b"\tmore"]
    elif choice == 3:
        fields = [b"X-Bad: " + junk(rng, rng.randrange(1, 200))]
    elif choice == 4:
        fields = [b"X-H%d: %d" % (i, i) for i in range(rng.randrange(100, 2500))]
    elif choice == 5:
        fields = [b"X-Big: " + b"b" * rng.randrange(20_000, 33_000)]
    elif choice == 6:
        fields = [b"X-Huge: " + b"h" * rng.randrange(33_000, 300_000)]
    elif choice == 7:
        fields = [b"Host: a", b"Host: b", b"Host: " + b"h" * 5000]
    elif choice == 8:
        fields = [b"X-Cr: a\rb", b"X-Nul: a\x00b", b"X-Del: \x7f"][rng.randrange(3):]
    elif choice == 9:
        fields = [b"Content-Type: " + rng.choice([b"application/json; charset=utf-7", b"\xff", b"multipart/form-data"])]
    elif choice == 10:
        fields = [b"Connection: " + rng.choice([b"close", b"keep-alive", b"close, close", b"upgrade", b"\x00", b"TE"])]
    else:
        fields = [b"X-Name-" + b"n" * rng.randrange(1, 10_000) + b": v"]
    method, path = rng.choice(ROUTES[:3])
    extra = [b"Content-Length: 0"] if method == b"POST" else []
    line_end = rng.choice([CRLF, CRLF, b"\n"])
    text = head(method + b" " + path + b" HTTP/1.1", [b"Host: t", *extra, *fields])
    return Case("header-fields", text.replace(CRLF, line_end) if line_end != CRLF else text, 1)


def forwarded_for(rng: random.Random) -> Case:
    choice = rng.randrange(8)
    if choice == 0:
        values = [junk(rng, rng.randrange(1, 100)).replace(b"\r", b"").replace(b"\n", b"")]
    elif choice == 1:
        values = [b", ".join(b"10.%d.%d.%d" % (rng.randrange(256), rng.randrange(256), rng.randrange(256))
                            for _ in range(rng.randrange(1, 2500)))]
    elif choice == 2:
        values = [b"203.0.113.%d" % i for i in range(rng.randrange(2, 300))]  # one header repeated
    elif choice == 3:
        values = [rng.choice([b"fe80::1%eth0", b"[2001:db8::1]:443", b"::ffff:1.2.3.4", b"::", b"1.2.3.4:80",
                              b"2001:db8:" + b"ffff:" * 20, b"0x7f.1", b"127.1", b"1.2.3.04", b"unknown", b"_hidden"])]
    elif choice == 4:
        values = [b"1" * rng.randrange(1000, 30_000)]
    elif choice == 5:
        values = [b"1.2.3.4" * rng.randrange(5_000, 40_000)]
    elif choice == 6:
        values = [b"", b",", b" , ,"][rng.randrange(3):]
    else:
        values = [b"%d.%d.%d.%d" % tuple(rng.randrange(300) for _ in range(4))]
    method, path = rng.choice(ROUTES[:2])
    headers = [b"Host: t", *(b"X-Forwarded-For: " + v for v in values)]
    return Case("x-forwarded-for", head(method + b" " + path + b" HTTP/1.1", headers), 1)


def identity(rng: random.Random) -> Case:
    name = rng.choice([b"X-Api-Key", b"X-User", b"X-Tenant", b"X-Tier", b"X-Request-Id", b"X-Client-Id", b"X-Client-Class"])
    value = rng.choice([b"k%d" % rng.randrange(10**9), junk(rng, 20).replace(b"\r", b"").replace(b"\n", b""),
                        b"x" * rng.randrange(100, 9000), b"", b"vip", b"legit", b"abusive", b"\xc3\xa9"])
    repeats = [b"k%d" % rng.randrange(10**9) for _ in range(rng.choice([0, 0, 1, 3]))]  # the same header again
    method, path = rng.choice(ROUTES[:3])
    extra = [b"Content-Length: 0"] if method == b"POST" else []
    fields = [name + b": " + v for v in (value, *repeats)]
    return Case("identity-headers", head(method + b" " + path + b" HTTP/1.1", [b"Host: t", *extra, *fields]), 1)


def content_length(rng: random.Random) -> Case:
    body = b'{"username": "cl"}'
    value = rng.choice([b"-1", b"+18", b"0x12", b"18, 18", b"18, 19", b"99999999999999999999999", b" 18 ", b"18\x00",
                        b"1e2", b"", b"18.0", b"\xff"])
    path = rng.choice([b"/login", b"/api/reports", b"/api/items"])
    method = b"GET" if path == b"/api/items" else b"POST"
    headers = [b"Host: t", b"Content-Length: " + value]
    if rng.random() < 0.3:
        headers.append(b"Content-Length: 3")
    if rng.random() < 0.3:
        headers.append(b"Transfer-Encoding: chunked")
    return Case("content-length", head(method + b" " + path + b" HTTP/1.1", headers) + body, 1)


def short_body(rng: random.Random) -> Case:
    """A body declared longer than sent: incomplete, the server may wait for the rest."""
    return Case("short-body", head(b"POST /login HTTP/1.1", [b"Host: t", b"Content-Length: %d" % rng.randrange(100, 4000)])
                + b'{"user', 0)


def chunked(rng: random.Random) -> Case:
    payload = json.dumps({"username": f"c{rng.randrange(100)}"}).encode()
    good = b"%x\r\n" % len(payload) + payload + CRLF + b"0\r\n\r\n"
    body = rng.choice([
        good,
        b"zz\r\n" + payload + b"\r\n0\r\n\r\n",
        b"ffffffffffffffffffff\r\n" + payload + b"\r\n0\r\n\r\n",
        b"-1\r\n\r\n0\r\n\r\n",
        b"5;" + b"e" * rng.randrange(10, 20_000) + b"\r\nhello\r\n0\r\n\r\n",
        b"5\r\nhello\r\n0\r\nX-Trailer: " + junk(rng, 30).replace(b"\r", b"").replace(b"\n", b"") + b"\r\n\r\n",
        b"3\r\nhello\r\n0\r\n\r\n",
        b"5\r\nhel\r\n\r\n0\r\n\r\n",
        b"5\nhello\n0\n\n",
        b"".join(b"1\r\n%c\r\n" % c for c in payload) + b"0\r\n\r\n",
        b"0\r\n\r\n" + junk(rng, 50) + b"\r\n\r\n",
    ])
    te = rng.choice([b"chunked", b"chunked", b"CHUNKED", b"chunked, gzip", b"gzip, chunked", b"gzip", b"xchunked",
                     b"chunked\x00", b" chunked"])
    headers = [b"Host: t", b"Transfer-Encoding: " + te]
    if rng.random() < 0.2:
        headers.append(b"Content-Length: %d" % len(body))
    path = rng.choice([b"/login", b"/api/reports"])
    return Case("chunked", head(b"POST " + path + b" HTTP/1.1", headers) + body, 1)


def pipelined(rng: random.Random) -> Case:
    n = rng.randrange(1, 12)
    data = b"".join(valid(rng) for _ in range(n))
    tail = rng.randrange(4)
    if tail == 0:
        return Case("pipelined", data, n)
    if tail == 1:
        return Case("pipelined+garbage", data + junk(rng, rng.randrange(1, 100)) + b"\r\n\r\n", n + 1)
    if tail == 2:
        return Case("pipelined+oversized", data + b"GET / HTTP/1.1\r\nX: " + b"o" * rng.randrange(45_000, 200_000), n + 1)
    return Case("pipelined+partial", data + b"GET /api/items HTTP/1.1\r\nHost", n)


def nested(rng: random.Random, depth: int) -> bytes:
    opens, closes = [], []
    for _ in range(depth):
        if rng.random() < 0.5:
            opens.append(b"[")
            closes.append(b"]")
        else:
            opens.append(b'{"a":')
            closes.append(b"}")
    return b"".join(opens) + b"1" + b"".join(reversed(closes))


def login_body(rng: random.Random) -> Case:
    choice = rng.randrange(10)
    if choice == 0:
        body = nested(rng, rng.randrange(500, 3000))[:4096]
    elif choice == 1:
        body = b"[" * rng.randrange(900, 4096)
    elif choice == 2:
        body = b'{"username": "u", "x": ' + nested(rng, rng.randrange(100, 800)) + b"}"
    elif choice == 3:
        body = junk(rng, rng.randrange(1, 4000))
    elif choice == 4:
        body = rng.choice([b'{"username": "\\ud800"}', b'{"username": 1e99999}', b"NaN", b"Infinity", b'"\xff"',
                           b"\xef\xbb\xbf{\"username\": \"bom\"}", b'{"username": null}', b'{"username": ["a"]}',
                           b'{"username": "a", "username": "b"}', b"{}", b"[]", b"", b"  ", b"{\"username\": \"" + b"u" * 300 + b"\"}"])
    elif choice == 5:
        body = json.dumps({"username": "x" * rng.randrange(1, 200), "pad": "p" * rng.randrange(4000, 100_000)}).encode()
    elif choice == 6:
        body = b'{"username": "' + bytes(rng.randrange(0x21, 0x7f) for _ in range(rng.randrange(1, 140))).replace(b'"', b"") + b'"}'
    elif choice == 7:
        body = b'{"username": "u"' + b"," * rng.randrange(1, 3000) + b"}"
    elif choice == 8:
        body = b'{"username": "' + b"\\u0000" * rng.randrange(1, 600) + b'"}'
    else:
        body = json.dumps({"username": f"u{rng.randrange(30)}", "password": "pw"}).encode()
    headers = [b"Host: t", b"Content-Length: %d" % len(body), b"Content-Type: application/json"]
    if rng.random() < 0.2:
        headers.append(b"X-Forwarded-For: 10.9.%d.%d" % (rng.randrange(256), rng.randrange(256)))
    return Case("login-body", head(b"POST /login HTTP/1.1", headers) + body, 1)


def odd_forms(rng: random.Random) -> Case:
    data, answers = rng.choice([
        (head(b"GET /api/items HTTP/1.1", [b"Host: t", b"Connection: Upgrade", b"Upgrade: websocket",
                                           b"Sec-WebSocket-Version: 13", b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="]) + b"\x81\x85", 1),
        (head(b"GET /api/items HTTP/1.1", [b"Host: t", b"Connection: Upgrade, HTTP2-Settings", b"Upgrade: h2c"]), 1),
        (head(b"CONNECT 127.0.0.1:22 HTTP/1.1", [b"Host: 127.0.0.1:22"]) + b"SSH-2.0\r\n", 1),
        (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + junk(rng, 30), 1),
        (head(b"OPTIONS * HTTP/1.1", [b"Host: t"]), 1),
        (head(b"GET http://127.0.0.1/api/items HTTP/1.1", [b"Host: other"]), 1),
        (head(b"GET /api/items HTTP/1.0", [b"Connection: keep-alive"]), 1),
        (head(b"GET /api/items HTTP/1.1", []), 1),
        (head(b"POST /login HTTP/1.1", [b"Host: t", b"Expect: 100-continue", b"Content-Length: 20"]) + b'{"username": "expec"}'[:20], 1),
        (head(b"POST /login HTTP/1.1", [b"Host: t", b"Expect: 100-continue", b"Content-Length: 20"]), 1),
        (b"\r\n" * rng.randrange(1, 2000) + valid(rng), 1),
        (b"GET /api/items HTTP/1.1\r\nHost: t", 0),
        (b"GET /api/ite", 0),
        (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + junk(rng, 100), 1),
    ])
    return Case("odd-forms", data, answers)


def random_bytes(rng: random.Random) -> Case:
    return Case("random-bytes", junk(rng, rng.randrange(1, 3000)) + b"\r\n\r\n", 1)


def mutated(rng: random.Random) -> Case:
    method, path = rng.choice(ROUTES[:2])
    data = bytearray(head(method + b" " + path + b" HTTP/1.1",
                          [b"Host: t", b"X-Api-Key: m%d" % rng.randrange(20), b"X-Forwarded-For: 198.51.100.7", b"Accept: */*"]))
    for _ in range(rng.randrange(1, 6)):
        at = rng.randrange(len(data) - 4)
        op = rng.randrange(4)
        if op == 0:
            data[at] ^= 1 << rng.randrange(8)
        elif op == 1:
            data.insert(at, rng.randrange(256))
        elif op == 2:
            del data[at]
        else:
            data[at:at] = data[at:at + rng.randrange(1, 30)]
    out = bytes(data)
    return Case("mutated", out if out.endswith(b"\r\n\r\n") else out + b"\r\n\r\n", 1)


FAMILIES: list[Callable[[random.Random], Case]] = [
    request_lines, header_fields, forwarded_for, identity, content_length, short_body, chunked, pipelined,
    login_body, login_body, odd_forms, random_bytes, mutated, mutated,
]


def corpus(seed: int = SEED, n: int = CASES) -> list[Case]:
    rng = random.Random(seed)
    return [FAMILIES[i % len(FAMILIES)](rng) for i in range(n)]
