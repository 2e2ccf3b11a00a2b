"""JSON lines (Envoy's and most gateways' JSON access logs) with a field mapping
``--field t=start_time,key=user_id,...``: canonical name = the record's field (dotted for a
nested one). ``t`` is epoch seconds or an ISO 8601 string.

The standard ``json`` module parses each line: a JSON log's records differ in shape from line to
line (absent fields, nested objects), which pyarrow's JSON reader refuses or types by the first
block; this format has no speed goal of its own."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from .source import FIELDS, LogBatch, LogError, LogReader, batch_of, canonical
from .stream import DEFAULT_BOUNDS, ReadBounds, head_lines
from .times import parse_times

MAPPABLE = ("t", *FIELDS, "request")
BLOCK_LINES = 65_536
CHECKED_RECORDS = 20
REQUIRED = ("t", "key", "addr")


def parse_mapping(pairs: list[str], source: str = "--field") -> dict[str, str]:
    """``["t=ts,key=user_id", "addr=client.ip"]`` -> {canonical: path}; unknown names refused."""
    mapping: dict[str, str] = {}
    for pair in ",".join(pairs).split(","):
        if not pair.strip():
            continue
        name, sep, path = pair.partition("=")
        name, path = name.strip(), path.strip()
        if not sep or not path:
            raise LogError(f"{source} {pair!r}: expected NAME=FIELD (e.g. t=start_time)")
        if name not in MAPPABLE and not name.startswith("http_"):
            raise LogError(f"{source} {pair!r}: {name!r} is not one of {', '.join(MAPPABLE)}, http_<header>")
        mapping[name] = path
    if "t" not in mapping:
        raise LogError(f"{source}: map the request time, t=FIELD (epoch seconds or ISO 8601)")
    if not {"key", "addr", "xff"} & mapping.keys() and not any(n.startswith("http_") for n in mapping):
        raise LogError(f"{source}: map who asked: key=FIELD, addr=FIELD, xff=FIELD or http_<header>=FIELD")
    return mapping


def _get(record: Any, path: list[str]) -> Any:
    for part in path:
        if not isinstance(record, dict) or part not in record:
            return None
        record = record[part]
    return record


class JsonLinesReader(LogReader):
    name = "json"

    def __init__(self, path: Path, mapping: dict[str, str], bounds: ReadBounds = DEFAULT_BOUNDS) -> None:
        super().__init__(path, bounds)
        self.mapping = mapping
        self.paths = {name: field.split(".") for name, field in mapping.items()}
        self._check_first()

    def _check_first(self) -> None:
        """A time, key or address field absent from every one of the first records is a wrong
        mapping, not a bad line (the others, an API key or X-Forwarded-For, are optional: a record
        without them is keyed further down the chain)."""
        head = head_lines(self.path, CHECKED_RECORDS, self.bounds)
        if not head:
            raise LogError(f"{self.path}: empty file")
        try:
            first = [json.loads(line) for line in head[:1]] + [json.loads(line) for line in head[1:] if line.startswith("{")]
        except ValueError:
            raise LogError(f"{self.path}: the first line is not JSON") from None
        for name, path in self.paths.items():
            if name in REQUIRED and all(_get(record, path) is None for record in first):
                have = ", ".join(first[0]) if isinstance(first[0], dict) else type(first[0]).__name__
                raise LogError(f"{self.path}: --field {name}={self.mapping[name]}: no such field in the first "
                               f"{len(first)} records; the first has: {have}")

    def _read(self) -> Iterator[LogBatch]:
        block: list[tuple[int, Any]] = []
        for lines in self._blocks():
            for i, line in enumerate(lines.data.decode("utf-8").split("\n")[:-1]):
                if not line.strip():
                    continue
                self.lines += 1
                try:
                    block.append((lines.number(i), json.loads(line)))
                except ValueError:
                    self.bad.add(lines.number(i), line.rstrip("\r"))
                if len(block) >= BLOCK_LINES:
                    yield self._batch(block)
                    block = []
            if block:
                yield self._batch(block)
                block = []

    def _batch(self, block: list[tuple[int, Any]]) -> LogBatch:
        columns = {name: [_get(r, path) for _, r in block] for name, path in self.paths.items()}
        times = pa.array([None if v is None else str(v) for v in columns.pop("t")], pa.string())
        raw = {name: pa.array([None if v is None else str(v) for v in values], pa.string())
               for name, values in columns.items()}
        numbers = [n for n, _ in block]
        return batch_of(parse_times("epoch", times), canonical(raw), times, self.bad, np.asarray(numbers))
