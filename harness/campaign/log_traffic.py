"""An access log as traffic: every request's time, who asked and which route, in time order,
read once and shared by every policy judged on it (`validate --traffic`, `simulate --trace`).

Compact records on disk, not Python objects (``request_records``): a time, an identity code (the
distinct (API key, user, address, X-Forwarded-For) tuples), a route code and a user-agent code
per request, in time order (lines out of order sorted exactly, on disk), read back a block at a
time; memory holds the distinct identities, routes and agents, not the requests, so a log of
any size is judged in the same memory. ``simulate --trace`` loads them whole (``columns``), where
they fit what a replay may hold (``check_replay``).

The key a limit counts a request by is derived with the targets' own key code
(``targets.ip_keys``: trusted hops from the right of X-Forwarded-For, IPv6 by prefix), once per
distinct identity.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from contract.memory import bound_of
from scenarios import SCENARIOS, Arrivals, TrafficModel
from scenarios.access_log import LogBatch, LogReader, ReadBounds, ReadSummary, open_log
from scenarios.access_log.source import BadLines
from scenarios.access_log.stream import DEFAULT_BOUNDS
from scenarios.base import LEGIT, ScenarioError
from scenarios.trace_file import KEY_BYTES, REPLAY_BYTES, REQUEST_BYTES, TraceFile, replay_bytes, rows_within, trace_run_name
from targets.config import KeyConfig
from targets.ip_keys import client_key, forwarded_ip, ip_key_function

from .request_records import RECORD, RecordFile, sorted_by_time, time_blocks

IDENTITY = ("key", "api_key", "user", "addr", "xff")
_SEP = "\x1f"
KEY_KINDS = ("api_key", "user", "ip", "global")
GLOBAL_KEY = "global"
"""The one key of a limit that counts every client together (``key: global``)."""


class _Codes:
    """Distinct values -> dense codes, across blocks (arrow's dictionary encoding per block, a
    dict lookup per distinct value only)."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.values: list[str] = []

    def encode(self, values: pa.Array) -> np.ndarray:
        encoded = pc.dictionary_encode(pc.fill_null(values, "")).combine_chunks() if isinstance(values, pa.ChunkedArray) \
            else pc.dictionary_encode(pc.fill_null(values, ""))
        mapping = np.empty(len(encoded.dictionary), dtype=np.int32)
        for i, value in enumerate(encoded.dictionary.to_pylist()):
            code = self.index.get(value)
            if code is None:
                code = self.index[value] = len(self.values)
                self.values.append(value)
            mapping[i] = code
        return mapping[encoded.indices.to_numpy(zero_copy_only=False)]


@dataclass
class LogTraffic:
    """A log's requests in time order (see the module's docstring)."""

    path: Path
    format: str
    records: RecordFile
    """Per request (time, identity, route, agent), in time order."""
    identities: list[tuple[str | None, ...]]
    """(key, api_key, user, addr, xff) per identity code; None: not logged."""
    routes: list[str]
    """``METHOD /path`` per route code."""
    agents: list[str]
    route_counts: np.ndarray
    """Requests per route code."""
    first_t: float
    last_t: float
    lines: int
    bad: BadLines
    out_of_order: int
    """Lines dated earlier than a line before them (sorted, not refused)."""
    whole_second: bool
    """The log cannot order requests inside a second: its format logs whole seconds (a JSON
    log: every time it holds is a whole second)."""
    keys_config: KeyConfig = field(default_factory=KeyConfig)
    detected: bool = False
    """Its format was detected from its first lines (none was given)."""
    summary: ReadSummary | None = None
    """Lines read, used and skipped for each reason (the reader's account)."""

    @property
    def requests(self) -> int:
        return self.records.n

    @property
    def span_s(self) -> float:
        return self.last_t - self.first_t if self.requests else 0.0

    def blocks(self) -> Iterator[tuple[int, np.ndarray]]:
        """(position of the first, records) in time order, a block at a time (``time_blocks``)."""
        return time_blocks(self.records)

    def columns(self) -> np.ndarray:
        """Every record at once (``simulate --trace``, whose requests are bounded before this)."""
        return self.records.read(0, self.requests)

    def keys(self, kind: str, trusted_proxies: int, ipv6_prefix: int) -> np.ndarray:
        """The key of every identity a limit keyed by ``kind`` counts (an object array by
        identity code): a logged key as is; else the API key > user > client address chain of
        the target's client key, entered at ``kind``; the address from the peer and
        X-Forwarded-For as the target takes it."""
        ip_key = ip_key_function(self.keys_config.ipv4_prefix, ipv6_prefix)
        out = np.empty(len(self.identities), dtype=object)
        for code, (key, api_key, user, addr, xff) in enumerate(self.identities):
            if kind == GLOBAL_KEY:
                out[code] = GLOBAL_KEY
                continue
            if key is not None:
                out[code] = key
                continue
            ip = forwarded_ip(addr, None if xff is None else xff.encode("latin-1", "replace"), trusted_proxies, ip_key)
            out[code] = ip if kind == "ip" else client_key(api_key if kind == "api_key" else None, user, ip)
        return out


def _identity_columns(columns: dict[str, pa.Array], n: int, config: KeyConfig) -> list[pa.Array]:
    """The identity parts of a block; the API key and user from their headers as the target names them."""
    empty = pa.nulls(n, pa.string())
    api_header, user_header = "http_" + config.api_key_header.replace("-", "_"), "http_" + config.user_header.replace("-", "_")
    api = columns.get("api_key", columns.get(api_header, empty))
    user = columns.get("user", empty)
    if user_header in columns:
        user = pc.coalesce(user, columns[user_header])
    return [columns.get("key", empty), api, user, columns.get("addr", empty), columns.get("xff", empty)]


def _sentinel(values: pa.Array) -> pa.Array:
    """Null -> a sentinel no logged value holds (``\\x00``), so "not logged" survives the join."""
    return pc.fill_null(values, "\x00")


@dataclass
class _Read:
    """What the read pass keeps besides the records: the time range, order and routes met."""

    t_min: float = np.inf
    t_max: float = -np.inf
    """The latest time so far: a line earlier than it is out of order."""
    out_of_order: int = 0
    whole: bool = True
    routes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def add(self, t: np.ndarray, route: np.ndarray) -> None:
        if not len(t):
            return
        ahead = np.maximum.accumulate(np.concatenate(([self.t_max], t)))
        self.out_of_order += int(np.count_nonzero(t < ahead[:-1]))
        self.t_min, self.t_max = min(self.t_min, float(t.min())), float(ahead[-1])
        self.whole = self.whole and bool(np.all(t == np.floor(t)))
        counts = np.bincount(route)
        if len(counts) > len(self.routes):
            self.routes = np.concatenate([self.routes, np.zeros(len(counts) - len(self.routes), dtype=np.int64)])
        self.routes[:len(counts)] += counts


def read_traffic(reader: LogReader, config: KeyConfig | None = None) -> LogTraffic:
    """Every block of the reader into records on disk, then in time order (``request_records``)."""
    config = config or KeyConfig()
    identity, route, agent = _Codes(), _Codes(), _Codes()
    raw, seen = RecordFile(), _Read()
    for batch in reader.batches():
        n = len(batch)
        records = np.empty(n, dtype=RECORD)
        records["t"] = batch.t
        records["identity"] = identity.encode(_joined(batch, config))
        method = batch.columns.get("method", pa.nulls(n, pa.string()))
        path = batch.columns.get("path", pa.nulls(n, pa.string()))
        records["route"] = route.encode(pc.binary_join_element_wise(pc.fill_null(method, "-"), pc.fill_null(path, "-"), " "))
        records["agent"] = agent.encode(batch.columns.get("agent", pa.nulls(n, pa.string())))
        raw.append(records)
        seen.add(records["t"], records["route"])
    reader.check_bad()
    pa.default_memory_pool().release_unused()  # the read's blocks, kept by arrow's allocator for reuse
    ordered = raw.sealed()
    if seen.out_of_order:
        ordered = sorted_by_time(raw, seen.t_min, seen.t_max)
        raw.close()
    return LogTraffic(
        path=reader.path, format=reader.name, records=ordered,
        identities=[tuple(None if p == "\x00" else p for p in v.split(_SEP)) for v in identity.values],
        routes=route.values, agents=agent.values, route_counts=np.pad(seen.routes, (0, len(route.values) - len(seen.routes))),
        first_t=seen.t_min if ordered.n else 0.0, last_t=seen.t_max if ordered.n else 0.0,
        lines=reader.lines, bad=reader.bad, out_of_order=seen.out_of_order,
        whole_second=reader.whole_second if reader.whole_second is not None else seen.whole,
        keys_config=config, summary=reader.summary(),
    )


def _joined(batch: LogBatch, config: KeyConfig) -> pa.Array:
    parts = [_sentinel(p) for p in _identity_columns(batch.columns, len(batch), config)]
    return pc.binary_join_element_wise(*parts, _SEP)


@dataclass(frozen=True)
class LogOptions:
    """How an access log is read, as the command line says it (``--format``, ``--log-format``,
    ``--field``; none given: the format is detected): one value for `validate --traffic` and
    `simulate --trace`, so both read a log alike."""

    name: str | None = None
    log_format: str | None = None
    fields: tuple[str, ...] = ()
    bounds: ReadBounds = DEFAULT_BOUNDS
    """``--max-line-bytes``, ``--max-bad-share``, ``--accept-truncated``."""
    replay_bytes: int = REPLAY_BYTES
    """``simulate --replay-memory``: the most a trace's replay may hold (``check_replay``)."""

    @property
    def given(self) -> bool:
        """A format was given (the bounds say how to read, not what)."""
        return self.name is not None or self.log_format is not None or bool(self.fields)


def load_traffic(path: Path, options: LogOptions = LogOptions()) -> LogTraffic:
    """Read ``path`` (format given or detected) into a LogTraffic; bad input raises LogError."""
    traffic = read_traffic(open_log(path, options.name, options.log_format, list(options.fields), options.bounds))
    traffic.detected = not options.given
    return traffic


DAY_S = 86_400.0


class LogTrace(TrafficModel):
    """`simulate --trace LOG`: an access log replayed as recorded, each request keyed by the
    target's client key under the default key config (API key > user > address, no trusted
    proxy, IPv6 by /64), its route ``METHOD /path`` at cost 1. Times are shifted by whole days to
    start near 0, so every window that divides a day keeps its calendar alignment."""

    summary = "an access log (--trace LOG: NGINX/Apache, JSON lines, ALB, CloudFront; plain or gzipped)"

    def __init__(self, traffic: LogTraffic, replay_bytes: int = REPLAY_BYTES) -> None:
        self.traffic = traffic
        self.name = trace_run_name(traffic.path)
        check_replay(traffic.path, traffic.requests, len(traffic.identities), replay_bytes)  # identities >= keys
        self._arrivals = self.generate()

    def generate(self) -> Arrivals:
        tr = self.traffic
        config = tr.keys_config
        columns = tr.columns()
        keys = tr.keys("api_key", config.trusted_proxies, config.ipv6_prefix)[columns["identity"]]
        t = columns["t"] - np.floor(tr.first_t / DAY_S) * DAY_S
        routes = np.array(tr.routes, dtype=object)[columns["route"]]
        return Arrivals(t.tolist(), keys.tolist(), [LEGIT] * len(t), keys.tolist(), routes.tolist(), [1.0] * len(t))

    def expected_requests(self) -> float:
        return len(self._arrivals)


TABLE_SUFFIXES = (".csv", ".parquet", ".pq")


def check_replay(path: Path, requests: int, keys: int, most_bytes: int) -> None:
    """Refuse a trace whose replay would pass ``most_bytes`` (``--replay-memory``; never more than
    half this machine's memory), naming its requests, its keys and what they would take
    (``scenarios.trace_file``: a request's and a key's bytes replayed): a larger log is judged
    whole by `validate --traffic`, which streams it."""
    bound = bound_of(most_bytes, 1)
    need = replay_bytes(requests, keys)
    if need > bound:
        given = "the default" if most_bytes == REPLAY_BYTES else "given"
        raise ScenarioError(
            f"--trace {path}: {requests:,} requests of {keys:,} keys would take about {need / 2**30:.1f} GiB replayed "
            f"(~{REQUEST_BYTES} bytes a request, ~{KEY_BYTES} a key), beyond --replay-memory {bound / 2**30:.1f} GiB "
            f"({given}; at most {bound_of(float('inf'), 1) / 2**30:.1f}, half this machine's memory); judge a log of "
            "any size with `validate --traffic` (streamed), or replay it in parts")


def trace_model(path: str | Path, options: LogOptions = LogOptions()) -> TrafficModel:
    """``--trace FILE``: a CSV or Parquet trace (t, key columns) by its suffix, else an access log;
    either refused past what a replay may hold (``check_replay``: a table's rows as they are read
    and its keys once read, a log's before its requests are held)."""
    path = Path(path)
    if path.suffix.lower() in TABLE_SUFFIXES:
        model: TrafficModel = TraceFile(path, rows_within(options.replay_bytes))
        keys = model.arrivals().key
        check_replay(path, len(keys), len(set(keys)), options.replay_bytes)
    else:
        model = LogTrace(load_traffic(path, options), options.replay_bytes)
    model.name = trace_run_name(path, SCENARIOS)  # never read as a scenario of the suite's
    return model
