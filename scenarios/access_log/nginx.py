"""NGINX ``log_format`` strings (and Apache's ``combined`` / ``common``, which are the same lines).

No well-kept parser takes an NGINX ``log_format`` string: the PyPI parsers read Apache
``LogFormat`` directives one line at a time into a dict (apachelogs, apache-log-parser), a few
times slower than the 250,000 lines/s this reader must reach. So the format is compiled here:

- a format made of space-separated variables, each bare, in quotes or ``[$time_local]`` (combined,
  common, NGINX's default ``main``, most custom ones) is read by pyarrow's multithreaded CSV
  parser with a space delimiter and ``"`` quoting (``delimited.py``): 4x the speed of a compiled
  regex on ``combined`` (``run_bench.py bench traffic`` prints both; docs/validate.md);
- any other format becomes one compiled regex (each variable matches up to the next literal
  character), run with ``findall`` over blocks of lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa

from .delimited import DelimitedReader, Layout
from .source import LogBatch, LogError, LogReader, batch_of, canonical
from .stream import DEFAULT_BOUNDS, ReadBounds
from .times import TIME_VARIABLES, WHOLE_SECOND, parse_times

COMBINED = '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent"'
COMMON = '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent'
PRESETS = {"combined": COMBINED, "common": COMMON}

MAPPED = {"remote_addr": "addr", "http_x_forwarded_for": "xff", "remote_user": "user", "request": "request",
          "request_method": "method", "request_uri": "path", "uri": "path", "status": "status",
          "http_user_agent": "agent"}
"""Variables read into a canonical column; the times are in ``TIME_VARIABLES``; any other
``$http_<header>`` is kept under its own name (an API key or user header)."""
IGNORED = frozenset((
    "body_bytes_sent", "bytes_sent", "request_time", "request_length", "http_referer", "host", "server_name",
    "server_port", "server_addr", "server_protocol", "scheme", "remote_port", "connection", "connection_requests",
    "pipe", "ssl_protocol", "ssl_cipher", "gzip_ratio", "request_id", "args", "query_string", "hostname",
    "upstream_addr", "upstream_status", "upstream_response_time", "upstream_connect_time", "upstream_header_time",
    "upstream_cache_status", "realip_remote_addr", "proxy_protocol_addr", "time_taken",
))
_IGNORED_PREFIXES = ("sent_http_", "upstream_http_", "cookie_", "arg_")
_QUOTED = r'((?:[^"\\\n]|\\.)*)'
_VARIABLE = re.compile(r"\$(?:\{(\w+)\}|(\w+))")


def variables(fmt: str) -> list[str]:
    return [a or b for a, b in _VARIABLE.findall(fmt)]


def check_variables(fmt: str, source: str) -> str:
    """The one time variable of the format; an unknown variable or no time: LogError."""
    names = variables(fmt)
    for name in names:
        known = name in MAPPED or name in IGNORED or name in TIME_VARIABLES or name.startswith("http_") \
            or name.startswith(_IGNORED_PREFIXES)
        if not known:
            raise LogError(f"{source}: log_format variable ${name} is not known; known: "
                           f"${', $'.join(sorted({*MAPPED, *TIME_VARIABLES}))}, $http_<header>, and ignored ones "
                           f"(${', $'.join(sorted(IGNORED))})")
    times = [n for n in names if n in TIME_VARIABLES]
    if not times:
        raise LogError(f"{source}: the log_format has no time ($msec, $time_iso8601 or $time_local): "
                       "requests cannot be ordered")
    if not any(n in ("remote_addr", "http_x_forwarded_for") or n.startswith("http_") for n in names):
        raise LogError(f"{source}: the log_format logs no client ($remote_addr, $http_x_forwarded_for or a key header)")
    return "msec" if "msec" in times else times[0]


def field_of(name: str) -> str | None:
    """The canonical column a variable is read into, None if ignored."""
    if name in MAPPED:
        return MAPPED[name]
    if name in TIME_VARIABLES:
        return "time:" + name
    return name if name.startswith("http_") and name not in IGNORED else None


def layout(fmt: str) -> Layout | None:
    """The delimited layout of a format of space-separated bare, quoted or bracketed variables;
    None if it has any other shape (then the regex reads it)."""
    names: dict[int, str] = {}
    time: list[int] = []
    time_variable = check_variables(fmt, "log_format")
    column = 0
    for token in fmt.split(" "):
        bare = token.strip('"')
        if bare == "[$time_local]":  # "[10/Oct/2026:13:55:36 +0000]": two space-separated columns
            if time_variable == "time_local":
                time = [column, column + 1]
            column += 2
            continue
        if token.startswith('"') != token.endswith('"') or (bare.startswith("$") and not _VARIABLE.fullmatch(bare)):
            return None
        if bare.startswith("$"):
            name = variables(bare)[0]
            target = field_of(name)
            if target == "time:" + time_variable:
                time = [column]
            elif target is not None and not target.startswith("time:"):
                names[column] = target
        elif not bare or "$" in bare or '"' in bare:
            return None
        column += 1
    return Layout(count=column, names=names, time=tuple(time), time_variable=time_variable)


def compile_format(fmt: str) -> tuple[re.Pattern[str], list[str | None], str]:
    """One regex for the whole line (a variable matches up to the next literal character; inside
    quotes, escaped quotes included; the last one, to the end of the line),
    alternated with ``(.*)`` so a line that does not match is kept, and counted, in place."""
    time_variable = check_variables(fmt, "log_format")
    parts, fields, pos = [], [], 0
    matches = list(_VARIABLE.finditer(fmt))
    for i, m in enumerate(matches):
        parts.append(re.escape(fmt[pos:m.start()]))
        following = fmt[m.end():matches[i + 1].start()] if i + 1 < len(matches) else fmt[m.end():]
        stop = following[:1]
        parts.append(_QUOTED if stop == '"' else f"([^{re.escape(stop)}\\n]*)" if stop else "(.*)")
        fields.append(field_of(m.group(1) or m.group(2)))
        pos = m.end()
    parts.append(re.escape(fmt[pos:]))
    return re.compile(f"^(?:{''.join(parts)}|(.*))$", re.MULTILINE), fields, time_variable


def reader_for(path: Path, fmt: str, name: str, bounds: ReadBounds = DEFAULT_BOUNDS) -> LogReader:
    """The fastest correct reader of ``fmt``."""
    shape = layout(fmt)
    if shape is not None:
        return DelimitedReader(path, name, shape, bounds)
    return RegexReader(path, fmt, name, bounds)


class RegexReader(LogReader):
    """Any log_format: one compiled regex over blocks of whole lines (``findall``: the matching
    loop stays in C; only the columns are built in Python)."""

    def __init__(self, path: Path, fmt: str, name: str, bounds: ReadBounds = DEFAULT_BOUNDS) -> None:
        super().__init__(path, bounds)
        self.name = name
        self.pattern, self.fields, self.time_variable = compile_format(fmt)
        self.whole_second = self.time_variable in WHOLE_SECOND

    def _read(self) -> Iterator[LogBatch]:
        for block in self._blocks():
            text = block.data.decode("utf-8").replace("\r\n", "\n")
            rows = self.pattern.findall(text)  # one match per line, the unmatched in the last group
            good, numbers = [], []
            for i, row in enumerate(rows[:text.count("\n")]):
                if row[-1].strip():
                    self.bad.add(block.number(i), row[-1])
                    self.lines += 1
                elif any(row[:-1]):
                    good.append(row)
                    numbers.append(block.number(i))
            self.lines += len(good)
            if good:
                yield self._batch(good, np.asarray(numbers))

    def _batch(self, rows: list[tuple[str, ...]], numbers: np.ndarray) -> LogBatch:
        raw: dict[str, pa.Array] = {}
        times = pa.array([], pa.string())
        for values, target in zip(zip(*rows), self.fields):
            if target == "time:" + self.time_variable:
                times = pa.array(values, pa.string())
            elif target is not None and not target.startswith("time:"):
                raw[target] = pa.array(values, pa.string())
        return batch_of(parse_times(self.time_variable, times), canonical(raw), times, self.bad, numbers)
