"""AWS access logs, by their documented field lists.

- ALB (Elastic Load Balancing, application load balancers): space-separated, quoted fields;
  ``type time elb client:port target:port ... elb_status_code ... "request" "user_agent" ...
  request_creation_time ...``. The request is dated by ``request_creation_time`` (when the load
  balancer received it: what a limiter in front would have seen) where the line has it, else by
  ``time`` (when the response was sent); both are ISO 8601 with microseconds. Fields AWS appends
  later are ignored.
- CloudFront standard logs: tab-separated, ``#Version`` and ``#Fields`` header lines naming the
  columns (``date time x-edge-location sc-bytes c-ip cs-method cs(Host) cs-uri-stem sc-status
  cs(Referer) cs(User-Agent) ... x-forwarded-for ...``); times are whole seconds (UTC) and the
  user agent is URL-encoded.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc

from .delimited import DelimitedReader, Layout
from .stream import DEFAULT_BOUNDS, LogError, ReadBounds, head_lines

ALB_TYPES = ("http", "https", "h2", "grpcs", "ws", "wss")
ALB_CREATION = 21
"""request_creation_time's column (0-based)."""
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|\S+')
CLOUDFRONT_FIELDS = (
    "date", "time", "x-edge-location", "sc-bytes", "c-ip", "cs-method", "cs(Host)", "cs-uri-stem", "sc-status",
    "cs(Referer)", "cs(User-Agent)", "cs-uri-query", "cs(Cookie)", "x-edge-result-type", "x-edge-request-id",
    "x-host-header", "cs-protocol", "cs-bytes", "time-taken", "x-forwarded-for", "ssl-protocol", "ssl-cipher",
    "x-edge-response-result-type", "cs-protocol-version", "fle-status", "fle-encrypted-fields", "c-port",
    "time-to-first-byte", "x-edge-detailed-result-type", "sc-content-type", "sc-content-len", "sc-range-start",
    "sc-range-end",
)
"""The documented columns, for a file whose ``#Fields`` line was cut off."""
CLOUDFRONT_MAPPED = {"c-ip": "addr", "x-forwarded-for": "xff", "cs-method": "method", "cs-uri-stem": "path",
                     "sc-status": "status", "cs(User-Agent)": "agent"}


def is_alb(line: str) -> bool:
    tokens = line.split(" ", 2)
    return len(tokens) == 3 and tokens[0] in ALB_TYPES and re.fullmatch(r"\d{4}-\d\d-\d\dT[\d:.]+Z", tokens[1]) is not None


def _alb_fix(raw: dict[str, pa.Array]) -> dict[str, pa.Array]:
    """``client:port`` -> the address (IPv6 addresses are logged without brackets)."""
    raw["addr"] = pc.extract_regex(raw["addr"], r"^\[?(?P<a>.*?)\]?:\d+$").field("a")
    return raw


def alb_reader(path: Path, bounds: ReadBounds = DEFAULT_BOUNDS) -> DelimitedReader:
    head = head_lines(path, 1, bounds)
    if not head:
        raise LogError(f"{path}: empty file")
    count = len(_TOKEN.findall(head[0]))
    if count < 14:
        raise LogError(f"{path}: an ALB line has at least 14 fields (type ... user_agent); the first has {count}")
    time = ALB_CREATION if count > ALB_CREATION else 1
    shape = Layout(count=count, names={3: "addr", 8: "status", 12: "request", 13: "agent"}, time=(time,),
                   time_variable="alb", fix=_alb_fix)
    return DelimitedReader(path, "alb", shape, bounds)


def _cloudfront_fix(raw: dict[str, pa.Array]) -> dict[str, pa.Array]:
    """The user agent is URL-encoded: decoded once per distinct value."""
    if "agent" in raw:
        encoded = raw["agent"].dictionary_encode()
        decoded = pa.array([unquote(v) if v is not None else None for v in encoded.dictionary.to_pylist()], pa.string())
        raw["agent"] = pc.take(decoded, encoded.indices)
    return raw


def cloudfront_reader(path: Path, bounds: ReadBounds = DEFAULT_BOUNDS) -> DelimitedReader:
    head = head_lines(path, 5, bounds)
    comments = [line for line in head if line.startswith("#")]
    declared = next((line.split(":", 1)[1].split() for line in comments if line.startswith("#Fields:")), None)
    fields = declared or CLOUDFRONT_FIELDS
    rows = [line for line in head if not line.startswith("#")]
    if not rows:
        raise LogError(f"{path}: no log lines after the CloudFront header")
    count = len(rows[0].split("\t"))
    index = {name: i for i, name in enumerate(fields)}
    missing = [f for f in ("date", "time", "c-ip") if f not in index]
    if missing:
        raise LogError(f"{path}: CloudFront #Fields has no {', '.join(missing)}")
    names = {index[f]: target for f, target in CLOUDFRONT_MAPPED.items() if f in index and index[f] < count}
    shape = Layout(count=count, names=names, time=(index["date"], index["time"]), time_variable="cloudfront",
                   delimiter="\t", skip_rows=len(comments), fix=_cloudfront_fix)
    return DelimitedReader(path, "cloudfront", shape, bounds)
