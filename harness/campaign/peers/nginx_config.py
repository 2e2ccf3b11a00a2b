"""A user's own NGINX file read for ``validate``: the ``limit_req`` lines it enforces, as policies
of the suite's vocabulary, and those lines (with what decides the 429's shape) for the live run.

The file is parsed by crossplane (NGINX's own grammar and directive contexts, with line numbers),
so a typo or a directive in the wrong block is named as NGINX would name it. A file without an
``http`` block is read as one included into ``http`` (``conf.d/*.conf``, ``sites-enabled/*``).
What validate cannot model is refused naming its line, never guessed.

``include`` is followed (``with_includes``) as NGINX does: a relative path or glob is resolved
against the directory of the file validate was given (NGINX resolves it against its conf prefix,
the directory of the main nginx.conf, not the including file: validate takes the given file as
that main file), a glob may match nothing, an explicit file that is missing or a cycle of includes
is refused in one line (``nginx -t`` fails both). The included statements take the include's place,
so limits defined in an included file are found; line numbers then count in that combined text.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import crossplane
from crossplane.errors import NgxParserBaseException

from targets.algorithms import Policy

from .base import ConfigLimit, PeerConfig, PeerError

Stmt = dict[str, Any]
"""One crossplane statement: ``directive``, ``args``, ``line`` and, for a block, ``block``."""

IP_VARIABLES = {"$binary_remote_addr", "$remote_addr", "$realip_remote_addr"}
KEPT_IN_LOCATION = ("limit_req_status", "limit_req_log_level", "error_page", "add_header", "set_real_ip_from",
                    "real_ip_header", "real_ip_recursive")
"""Directives the live run keeps from the user's location (innermost level that sets them):
what refuses, what the refusal looks like, and whose address is the key."""
UNSUPPORTED = {"limit_conn": "limits concurrent connections, not a rate", "limit_conn_zone": "limits concurrent connections",
               "limit_rate": "limits bandwidth, not requests", "limit_req_dry_run": "refuses nothing (dry run)"}
_RATE = re.compile(r"^rate=(\d+)r/([sm])$")


@dataclass
class NginxFile:
    """What the live run keeps of a user's file: the lines that limit, in the generated server."""

    config: PeerConfig
    http: list[Stmt] = field(default_factory=list)
    """``geo`` and ``map`` blocks the keys use and the ``limit_req_zone`` lines."""
    location: list[Stmt] = field(default_factory=list)
    """``limit_req`` and KEPT_IN_LOCATION."""
    server: list[Stmt] = field(default_factory=list)
    """The named locations ``error_page`` sends a refusal to."""

    def build(self, stmts: list[Stmt], indent: int) -> str:
        return "\n".join(" " * indent + line for line in crossplane.build(stmts, indent=4).splitlines())


_INCLUDE = re.compile(r"(?<![\w$])include\s")


def with_includes(text: str, path: Path) -> str:
    """``text`` (the file at ``path``) with every ``include`` replaced by the statements it names;
    unchanged when it includes nothing. A PeerError names a missing file or a cycle."""
    if not _INCLUDE.search(text):
        return text
    where = str(path.resolve())
    # context checks wait for parse(), which reads the combined text in its http block
    payload = crossplane.parse(where, catch_errors=True, check_ctx=False, check_args=False)
    if payload["errors"]:
        error = payload["errors"][0]
        raise PeerError(f"{error['file']}: line {error['line']}: {error['error'].split(' in ' + error['file'])[0]}")
    _refuse_cycles(payload["config"])
    combined = crossplane.parse(where, catch_errors=True, check_ctx=False, check_args=False, combine=True)
    return crossplane.build(combined["config"][0]["parsed"])


def _refuse_cycles(configs: list[dict[str, Any]]) -> None:
    """crossplane parses each file once, so a file that includes itself (or an ancestor) would
    only loop when the includes are inlined; NGINX refuses it."""
    edges = {i: [j for s, _ in _walk(c["parsed"]) for j in s.get("includes", [])] for i, c in enumerate(configs)}

    def visit(trail: tuple[int, ...]) -> None:
        for j in edges[trail[-1]]:
            if j in trail:
                cycle = [configs[k]["file"] for k in (*trail[trail.index(j):], j)]
                raise PeerError(f"include cycle: {' -> '.join(cycle)}")
            visit((*trail, j))

    visit((0,))


def parse(text: str) -> list[Stmt]:
    """The file's statements under an ``http`` block; a PeerError ``line N: ...`` on bad syntax."""
    wrapped = not re.search(r"^\s*http\s*\{", text, re.MULTILINE)
    with tempfile.TemporaryDirectory(prefix="validate-nginx-") as tmp:
        path = Path(tmp) / "nginx.conf"
        # crossplane reads files; "http { " on the first line keeps every line number
        path.write_text(f"http {{ {text}\n}}\n" if wrapped else text, encoding="utf-8")
        try:
            payload = crossplane.parse(str(path), single=True, catch_errors=False)
        except NgxParserBaseException as exc:
            raise PeerError(f"line {exc.lineno}: {exc.strerror}") from None
    if payload["errors"]:  # some syntax errors are recorded, not raised
        error = payload["errors"][0]
        raise PeerError(f"line {error['line']}: {error['error'].split(' in ' + str(path))[0]}")
    top = payload["config"][0]["parsed"]
    return next((s["block"] for s in top if s["directive"] == "http"), [])


def _walk(stmts: list[Stmt], path: tuple[Stmt, ...] = ()) -> list[tuple[Stmt, tuple[Stmt, ...]]]:
    out = []
    for s in stmts:
        out.append((s, path))
        out += _walk(s.get("block") or [], (*path, s))
    return out


def _options(s: Stmt) -> dict[str, str]:
    return {a.split("=", 1)[0]: a.split("=", 1)[1] if "=" in a else "" for a in s["args"]}


def _key_kind(variable: str, maps: dict[str, Stmt], line: int) -> str:
    """``ip`` or ``api_key``: what the key variable (or the map that defines it) reads."""
    if variable in IP_VARIABLES:
        return "ip"
    if variable.startswith("$http_"):
        return "api_key"
    if variable in maps:
        m = maps[variable]
        values = [m["args"][0], *(a for entry in m["block"] for a in entry["args"])]
        if any(v.startswith("$http_") for v in values):
            return "api_key"
        if any(v in IP_VARIABLES for v in values):
            return "ip"
    raise PeerError(f"line {line}: key {variable}: validate models keys by the client address "
                    f"({', '.join(sorted(IP_VARIABLES))}), a request header ($http_...) or a map of these")


def _zone(s: Stmt, maps: dict[str, Stmt]) -> tuple[str, Policy, str]:
    opts, line = _options(s), s["line"]
    name = opts.get("zone", "").split(":")[0]
    if not name:
        raise PeerError(f"line {line}: limit_req_zone without zone=NAME:SIZE")
    rate = _RATE.match(f"rate={opts.get('rate', '')}")
    if rate is None:
        raise PeerError(f"line {line}: limit_req_zone {name}: rate={opts.get('rate', '')!r}; NGINX takes a whole "
                        "number of requests per second or per minute (rate=10r/s, rate=100r/m)")
    n = int(rate.group(1))
    if n == 0:
        raise PeerError(f"line {line}: limit_req_zone {name}: rate 0 refuses every request")
    return name, Policy(n, 1.0 if rate.group(2) == "s" else 60.0), _key_kind(s["args"][0], maps, line)


def _innermost(path: tuple[Stmt, ...], directive: str) -> list[Stmt]:
    """NGINX's inheritance of array directives: the innermost level that sets any wins whole."""
    for level in reversed(path):
        found = [s for s in level.get("block") or [] if s["directive"] == directive]
        if found:
            return found
    return []


def _header(stmts: list[Stmt], name: str) -> str | None:
    """A header the 429 really carries: ``add_header NAME VALUE always`` (without ``always``
    NGINX adds it to 2xx and 3xx responses only)."""
    for s in stmts:
        if s["directive"] == "add_header" and s["args"][0].lower() == name.lower() and s["args"][-1] == "always":
            return s["args"][1]
    return None


def read_nginx(text: str) -> NginxFile:
    """The user's file: its limits (each ``limit_req`` line, through its zone) and the lines kept live."""
    root = {"directive": "http", "args": [], "line": 0, "block": parse(text)}
    every = _walk([root])
    for s, _ in every:
        if s["directive"] in UNSUPPORTED:
            raise PeerError(f"line {s['line']}: {s['directive']} {UNSUPPORTED[s['directive']]}: validate models "
                            "limit_req only (remove it or validate it apart)")
    maps = {s["args"][1]: s for s, _ in every if s["directive"] == "map"}
    zones = {name: (policy, kind, s) for s in (s for s, _ in every if s["directive"] == "limit_req_zone")
             for name, policy, kind in [_zone(s, maps)]}
    uses = [(s, path) for s, path in every if s["directive"] == "limit_req"]
    if not uses:
        raise PeerError("no limit_req line: nothing in the file limits requests")
    if len({id(path[-1]) for _, path in uses}) > 1:  # every path starts at the http block
        raise PeerError(f"line {uses[1][0]['line']}: limit_req in a second block: validate reads the limit_req "
                        "lines of one location (validate each location apart)")
    limits, notes = [], []
    for s, _ in uses:
        opts = _options(s)
        if opts.get("zone") not in zones:
            raise PeerError(f"line {s['line']}: limit_req zone={opts.get('zone', '')}: no limit_req_zone defines it")
        policy, kind, _ = zones[opts["zone"]]
        burst = opts.get("burst", "0")
        if not burst.isdigit():
            raise PeerError(f"line {s['line']}: limit_req burst={burst!r} is not a whole number")
        if "delay" in opts:
            notes.append(f"line {s['line']}: delay={opts['delay']}: NGINX holds requests beyond the first "
                         f"{opts['delay']} of a burst; the model predicts which are refused, not how long they wait")
        elif "nodelay" not in opts:
            notes.append(f"line {s['line']}: without nodelay NGINX holds every request of a burst until its turn; "
                         "the model predicts which are refused, not how long they wait")
        limits.append(ConfigLimit(opts["zone"], Policy(policy.limit, policy.window_s, int(burst) + 1), kind, s["line"]))
    notes.append("the suggestions speak the policy's terms: a burst B is NGINX burst=B-1 at rate=L/W; NGINX counts "
                 "as a token bucket (another algorithm means another limiter in front of it)")
    where = uses[0][1]
    kept = [s for d in KEPT_IN_LOCATION for s in _innermost(where, d)]
    status = next((int(s["args"][0]) for s in kept if s["directive"] == "limit_req_status"), 503)
    server = next((level for level in reversed(where) if level["directive"] == "server"), None)
    named = {s["args"][0]: s for s in (server or {}).get("block") or [] if s["directive"] == "location"
             and s["args"][0].startswith("@")}
    targets = [named[s["args"][-1]] for s in kept if s["directive"] == "error_page" and s["args"][-1] in named
               and str(status) in s["args"]]
    answer = [*kept, *(t for block in targets for t in block["block"])]
    real_ip = any(s["directive"] == "set_real_ip_from" for s in kept)
    zone_lines = [stmt for _, _, stmt in zones.values()]
    used_maps = {s["args"][0] for s in zone_lines} & set(maps)
    geos = {s["args"][-1]: s for s, _ in every if s["directive"] == "geo"}
    used_geos = {maps[m]["args"][0] for m in used_maps} & set(geos)
    config = PeerConfig(limits, retry_after=_header(answer, "Retry-After") is not None,
                        cache_control=_header(answer, "Cache-Control"), reject_status=status,
                        trusted_proxies=1 if real_ip else None, notes=notes)
    keys = [geos[g] for g in sorted(used_geos)] + [maps[m] for m in sorted(used_maps)]
    return NginxFile(config, keys + zone_lines, [s for s, _ in uses] + kept, targets)
