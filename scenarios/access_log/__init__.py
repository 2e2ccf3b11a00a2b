"""Access logs in: NGINX/Apache (``combined``, ``common``, NGINX's ``main``, any ``log_format``),
JSON lines with a field mapping, AWS ALB and CloudFront, plain or gzipped, streamed in blocks
through the bounds of ``stream.py`` (line length, UTF-8, a gzip cut short, the first block).

``open_log`` picks the reader (the format given, or detected from the first lines, and says
which); a reader's ``batches()`` yields canonical columns (``source.FIELDS``) and epoch times.
Turning those into keys and costs is the policy's business (harness/campaign/log_traffic.py)."""

from __future__ import annotations

from pathlib import Path

from .aws import alb_reader, cloudfront_reader, is_alb
from .jsonl import JsonLinesReader, parse_mapping
from .nginx import COMBINED, PRESETS, compile_format, reader_for
from .source import LogBatch, LogReader, ReadSummary
from .stream import DEFAULT_BOUNDS, LogError, ReadBounds, head_lines

MAIN = COMBINED + ' "$http_x_forwarded_for"'
"""NGINX's default ``main`` format: combined plus the X-Forwarded-For header."""
NAMED = {"main": MAIN, **PRESETS}
FORMATS = (*NAMED, "alb", "cloudfront", "json")
DETECT_LINES = 20

__all__ = ["FORMATS", "LogBatch", "LogError", "LogReader", "ReadBounds", "ReadSummary", "open_log"]


def open_log(path: Path, fmt: str | None = None, log_format: str | None = None,
             fields: list[str] | None = None, bounds: ReadBounds = DEFAULT_BOUNDS) -> LogReader:
    """The reader for ``path``: ``fmt`` (one of FORMATS), an NGINX ``log_format`` string, a JSON
    field mapping, or (none given) the format detected from the first lines; every one reads
    through ``bounds`` (stream.py)."""
    head = head_lines(path, DETECT_LINES, bounds)
    if not head:
        raise LogError(f"{path}: empty file (no log lines)")
    if fields:
        return JsonLinesReader(path, parse_mapping(fields), bounds)
    if log_format is not None:
        return reader_for(path, log_format, "log_format", bounds)
    fmt = fmt or detect(path, head)
    if fmt in NAMED:
        return reader_for(path, NAMED[fmt], fmt, bounds)
    if fmt == "alb":
        return alb_reader(path, bounds)
    if fmt == "cloudfront":
        return cloudfront_reader(path, bounds)
    if fmt == "json":
        raise LogError(f"{path}: JSON lines need a field mapping: --field t=FIELD,key=FIELD (or addr=FIELD, ...)")
    raise LogError(f"{path}: unknown format {fmt!r}; formats: {', '.join(FORMATS)}, or --log-format STRING")


def detect(path: Path, head: list[str]) -> str:
    """The format of the first lines: CloudFront's header, an ALB line, JSON, or the NGINX
    preset most of them match (the longest first: ``main`` lines would also start as combined)."""
    first = head[0]
    if first.startswith(("#Version:", "#Fields:")):
        return "cloudfront"
    if is_alb(first):
        return "alb"
    if first.lstrip().startswith("{"):
        return "json"
    for name in ("main", "combined", "common"):
        pattern = compile_format(NAMED[name])[0]
        if sum(not m.group(m.re.groups) for m in map(pattern.fullmatch, head) if m) > len(head) // 2:
            return name
    raise LogError(f"{path}: format not recognised (tried {', '.join(FORMATS)}); give --format NAME or "
                   f"--log-format 'THE NGINX log_format STRING'; first line: {first[:120]!r}")
