"""Requests written as access log lines, in every format the readers take: the benchmark's
generated log and the tests' logs (whose refused counts are computed by hand) come from here."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import quote

from .aws import CLOUDFRONT_FIELDS

CUSTOM = '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" ' \
         '"$http_user_agent" "$http_x_forwarded_for" "$http_x_api_key" $msec'
"""A custom NGINX format with the exact time and the API key header (read by the delimited reader)."""
PIPED = "$msec|$remote_addr|$http_x_forwarded_for|$http_x_api_key|$remote_user|$request|$status|$http_user_agent"
"""A custom format no delimiter reads: the compiled regex reads it."""


@dataclass(frozen=True)
class LoggedRequest:
    t: float
    addr: str
    method: str = "GET"
    path: str = "/api/items"
    xff: str | None = None
    user: str | None = None
    api_key: str | None = None
    agent: str = "Mozilla/5.0 (X11; Linux x86_64)"
    status: int = 200


def _dash(value: str | None) -> str:
    return "-" if value is None else value


def _local(t: float) -> str:
    return datetime.fromtimestamp(t, tz=UTC).strftime("%d/%b/%Y:%H:%M:%S +0000")


def _iso(t: float, digits: int = 6) -> str:
    stamp = datetime.fromtimestamp(t, tz=UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S") + (stamp.strftime(".%f")[: digits + 1] if digits else "") + "Z"


def _q(value: str) -> str:
    """A quoted field's value, its quotes escaped as Apache writes them (NGINX writes ``\\x22``)."""
    return value.replace("\\", "\\\\").replace('"', '\\"')


def line(r: LoggedRequest, fmt: str) -> str:
    """One line of ``fmt``: combined, common, main, custom (``CUSTOM``), piped (``PIPED``),
    json, alb or cloudfront."""
    request = f"{r.method} {r.path} HTTP/1.1"
    head = f'{r.addr} - {_dash(r.user)} [{_local(r.t)}] "{request}" {r.status} 512'
    tail = f' "-" "{_q(r.agent)}"'
    if fmt == "common":
        return head
    if fmt == "combined":
        return head + tail
    if fmt == "main":
        return head + tail + f' "{_dash(r.xff)}"'
    if fmt == "custom":
        return head + tail + f' "{_dash(r.xff)}" "{_dash(r.api_key)}" {r.t:.3f}'
    if fmt == "piped":
        return "|".join((f"{r.t:.3f}", r.addr, _dash(r.xff), _dash(r.api_key), _dash(r.user), request, str(r.status), r.agent))
    if fmt == "json":
        record = {"start_time": _iso(r.t, 3), "downstream": {"address": r.addr}, "xff": r.xff, "api_key": r.api_key,
                  "user": r.user, "method": r.method, "path": r.path, "user_agent": r.agent, "code": r.status}
        return json.dumps({k: v for k, v in record.items() if v is not None})
    if fmt == "alb":
        client = f"{r.addr}:{40000 + int(r.t) % 20000}"
        return (f'https {_iso(r.t)} app/lb/50dc6c495c0c9188 {client} 10.0.0.1:80 0.001 0.002 0.000 {r.status} '
                f'{r.status} 34 366 "{r.method} https://api.example.com:443{r.path} HTTP/1.1" "{_q(r.agent)}" '
                f'ECDHE-RSA-AES128-GCM-SHA256 TLSv1.2 arn:aws:elasticloadbalancing:tg "Root=1-58337262" '
                f'"api.example.com" "arn:aws:acm:cert" 0 {_iso(r.t)} "forward" "-" "-" "10.0.0.1:80" "{r.status}" '
                f'"-" "-" TID_1')
    if fmt == "cloudfront":
        stamp = datetime.fromtimestamp(r.t, tz=UTC)
        values = {"date": stamp.strftime("%Y-%m-%d"), "time": stamp.strftime("%H:%M:%S"), "c-ip": r.addr,
                  "cs-method": r.method, "cs-uri-stem": r.path, "sc-status": str(r.status),
                  "cs(User-Agent)": quote(r.agent), "x-forwarded-for": _dash(r.xff)}
        return "\t".join(values.get(name, "-") for name in CLOUDFRONT_FIELDS)
    raise ValueError(f"unknown format {fmt!r}")


def render(requests: Iterable[LoggedRequest], fmt: str) -> str:
    """The whole file (CloudFront's with its two header lines)."""
    header = f"#Version: 1.0\n#Fields: {' '.join(CLOUDFRONT_FIELDS)}\n" if fmt == "cloudfront" else ""
    return header + "".join(line(r, fmt) + "\n" for r in requests)


JSON_FIELDS = "t=start_time,addr=downstream.address,xff=xff,api_key=api_key,user=user,method=method,path=path,agent=user_agent"
"""The --field mapping of the ``json`` lines above."""
