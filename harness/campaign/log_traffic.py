"""An access log as traffic: every request's time, who asked and which route, in time order,
read once and shared by every policy judged on it (`validate --traffic`, `simulate --trace`).

Compact columns, not Python objects: a time (float64), an identity code (the distinct
(API key, user, address, X-Forwarded-For) tuples), a route code and a user-agent code per
request, about 20 bytes a line, so five million lines stay near 100 MB. Lines out of time
order (several workers writing one file) are put in order by one stable sort of those columns
after the read: exact, where a reorder window would misplace any line later than the window.

The key a limit counts a request by is derived with the targets' own key code
(``targets.ip_keys``: trusted hops from the right of X-Forwarded-For, IPv6 by prefix), once per
distinct identity.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from scenarios import SCENARIOS, Arrivals, TrafficModel
from scenarios.access_log import LogBatch, LogReader, ReadBounds, ReadSummary, open_log
from scenarios.access_log.source import BadLines
from scenarios.access_log.stream import DEFAULT_BOUNDS
from scenarios.base import LEGIT
from scenarios.trace_file import TraceFile, trace_run_name
from targets.config import KeyConfig
from targets.ip_keys import client_key, forwarded_ip, ip_key_function

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
    t: np.ndarray
    identity: np.ndarray
    route: np.ndarray
    agent: np.ndarray
    identities: list[tuple[str | None, ...]]
    """(key, api_key, user, addr, xff) per identity code; None: not logged."""
    routes: list[str]
    """``METHOD /path`` per route code."""
    agents: list[str]
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

    @cached_property
    def spread_t(self) -> np.ndarray:
        """Whole-second times with each second's requests spread evenly over it (in log order).
        The times are sorted: each second is a run of equal values, found by one comparison
        (no sort, as ``np.unique`` would make: it costs several copies of the column)."""
        n = len(self.t)
        if not n:
            return self.t.copy()
        starts = np.empty(n, dtype=bool)
        starts[0] = True
        np.not_equal(self.t[1:], self.t[:-1], out=starts[1:])
        first = np.flatnonzero(starts)
        counts = np.diff(first, append=n)
        second = np.cumsum(starts, dtype=np.int32) - 1
        spread = np.arange(n, dtype=np.float64)
        spread -= first[second]
        spread /= counts[second]
        spread += self.t
        return spread

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


def read_traffic(reader: LogReader, config: KeyConfig | None = None) -> LogTraffic:
    """Every block of the reader into compact columns, then one stable sort by time."""
    config = config or KeyConfig()
    identity, route, agent = _Codes(), _Codes(), _Codes()
    ts, ids, routes, agents = [], [], [], []
    for batch in reader.batches():
        ts.append(batch.t)
        ids.append(identity.encode(_joined(batch, config)))
        n = len(batch)
        method = batch.columns.get("method", pa.nulls(n, pa.string()))
        path = batch.columns.get("path", pa.nulls(n, pa.string()))
        routes.append(route.encode(pc.binary_join_element_wise(pc.fill_null(method, "-"), pc.fill_null(path, "-"), " ")))
        agents.append(agent.encode(batch.columns.get("agent", pa.nulls(n, pa.string()))))
    reader.check_bad()
    pa.default_memory_pool().release_unused()  # the read's blocks, kept by arrow's allocator for reuse
    t = np.concatenate(ts) if ts else np.empty(0)
    out_of_order = int(np.count_nonzero(t[1:] < np.maximum.accumulate(t)[:-1])) if len(t) > 1 else 0
    order = np.argsort(t, kind="stable") if out_of_order else slice(None)
    return LogTraffic(
        path=reader.path, format=reader.name, t=t[order], identity=np.concatenate(ids)[order] if ids else np.empty(0, np.int32),
        route=np.concatenate(routes)[order] if routes else np.empty(0, np.int32),
        agent=np.concatenate(agents)[order] if agents else np.empty(0, np.int32),
        identities=[tuple(None if p == "\x00" else p for p in v.split(_SEP)) for v in identity.values],
        routes=route.values, agents=agent.values, lines=reader.lines, bad=reader.bad, out_of_order=out_of_order,
        whole_second=reader.whole_second if reader.whole_second is not None else bool(np.all(t == np.floor(t))),
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

    def __init__(self, traffic: LogTraffic) -> None:
        self.traffic = traffic
        self.name = trace_run_name(traffic.path)
        self._arrivals = self.generate()

    def generate(self) -> Arrivals:
        tr = self.traffic
        config = tr.keys_config
        keys = tr.keys("api_key", config.trusted_proxies, config.ipv6_prefix)[tr.identity]
        t = tr.t - np.floor(tr.t[0] / DAY_S) * DAY_S if len(tr.t) else tr.t
        routes = np.array(tr.routes, dtype=object)[tr.route]
        return Arrivals(t.tolist(), keys.tolist(), [LEGIT] * len(t), keys.tolist(), routes.tolist(), [1.0] * len(t))

    def expected_requests(self) -> float:
        return len(self._arrivals)


TABLE_SUFFIXES = (".csv", ".parquet", ".pq")


def trace_model(path: str | Path, options: LogOptions = LogOptions()) -> TrafficModel:
    """``--trace FILE``: a CSV or Parquet trace (t, key columns) by its suffix, else an access log."""
    path = Path(path)
    model = TraceFile(path) if path.suffix.lower() in TABLE_SUFFIXES else LogTrace(load_traffic(path, options))
    model.name = trace_run_name(path, SCENARIOS)  # never read as a scenario of the suite's
    return model
