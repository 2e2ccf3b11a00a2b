"""A user's own haproxy.cfg read for ``validate``: beside the limit (haproxy.py reads it), the
lines that decide a request's fate, kept for the live run in the real haproxy, and what the
refusal looks like.

HAProxy's file is sections (``frontend``/``listen``/``backend``/...) of keyword lines. The live
run keeps, of the section that holds the rate's deny rule, every ``acl`` and ``http-request``
line (tracking, deny/return/tarpit, variables) and the ``http-after-response`` lines (headers
a deny carries), and each stick table those lines track (in the section itself, or the
``backend`` named by ``table NAME``); not the user's binds, backends or servers. A deny answers
403 unless ``deny_status`` says otherwise (HAProxy's default).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

SECTIONS = {"global", "defaults", "frontend", "backend", "listen", "peers", "resolvers", "userlist", "cache",
            "program", "http-errors", "ring", "mailers"}
KEPT = ("acl", "http-request", "http-after-response")
DENY_STATUS = 403
"""``http-request deny`` without ``deny_status``: 403 Forbidden."""
_RATE_WORD = re.compile(r"sc(?:\d_|_)http_req_rate")


@dataclass
class Section:
    kind: str
    name: str
    line: int
    lines: list[tuple[int, str]] = field(default_factory=list)
    """(line number, the line without its comment)."""


@dataclass
class HaproxyFile:
    """What the live run keeps of a user's file: the deciding section's lines and its tables."""

    section: Section
    kept: list[str]
    tables: dict[str, str]
    """A ``backend`` name -> its ``stick-table`` line; ``""``: a table of the deciding section."""
    reject_status: int
    retry_after: bool
    key: str
    """``ip`` (``track-sc0 src``) or ``api_key`` (a header, cookie or parameter)."""


def sections(text: str) -> list[Section]:
    out: list[Section] = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].rstrip()
        words = line.split()
        if not words:
            continue
        if words[0] in SECTIONS and not raw[:1].isspace():
            out.append(Section(words[0], words[1] if len(words) > 1 else "", n))
        elif out:
            out[-1].lines.append((n, line.strip()))
    return out


def read_haproxy(text: str) -> HaproxyFile:
    """The section whose ``http-request`` rule reads the request rate, its kept lines and tables.
    Call after the limit is read (haproxy.py refuses a file without one)."""
    every = sections(text)
    deciding = next(s for s in every if s.kind in ("frontend", "listen")
                    and any(ln.split()[0] in KEPT and _RATE_WORD.search(ln) for _, ln in s.lines))
    kept = [ln for _, ln in deciding.lines if ln.split()[0] in KEPT]
    own = [ln for _, ln in deciding.lines if ln.startswith("stick-table")]
    tables = {"": own[0]} if own else {}
    named = {w for ln in kept for w in re.findall(r"\btable\s+(\S+)", ln)}
    for s in every:
        if s.kind == "backend" and s.name in named:
            tables[s.name] = next((ln for _, ln in s.lines if ln.startswith("stick-table")), "")
    deny = next((ln for ln in kept if ln.startswith("http-request deny") and _rate_in(ln, kept)), "")
    status = re.search(r"\bdeny_status\s+(\d{3})", deny)
    retry = "retry-after" in " ".join(ln for ln in [deny] + [k for k in kept if k.startswith("http-after-response")]).lower()
    track = next((ln for ln in kept if re.match(r"http-request track-sc\d", ln)), "")
    key = "api_key" if re.search(r"\b(req\.hdr|hdr|req\.cook|url_param)\(", track) else "ip"
    return HaproxyFile(deciding, kept, tables, int(status[1]) if status else DENY_STATUS, retry, key)


def _rate_in(line: str, kept: list[str]) -> bool:
    """Whether the rule reads the rate itself or through an acl that does."""
    acls = {ln.split()[1] for ln in kept if ln.startswith("acl") and _RATE_WORD.search(ln)}
    return bool(_RATE_WORD.search(line)) or any(re.search(rf"(?<![\w-])!?{re.escape(a)}(?![\w-])", line) for a in acls)
