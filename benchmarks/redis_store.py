"""Redis store benchmark: ``python -m benchmarks.redis_store [--url URL] [--decisions N]``.

Per algorithm: decisions/s with one sync client, one async client and 64 concurrent asyncio
clients, round trips per decision, side by side with the ``limits`` library's Redis storage on
the matching algorithms (fixed window, moving window = sliding log, sliding window counter), in
the same run against the same server; then the leased mode; then MEMORY USAGE of each
algorithm's state after 100 admits on one key (limit 100). Without ``--url`` it starts a
redis-server of its own.

The machine may be shared (2 cores, other jobs): every cell is measured ``--rounds`` times,
rounds going through all rows in turn, and the median is printed. A row with a ``limits`` match
is measured together with it, in alternating blocks of BLOCK decisions (ABBA order), so a slow
phase hits both alike; the ours / limits ratio is the median of the per-round ratios. Redis's
own µs per EVALSHA (INFO commandstats, read between blocks) shows the server's side apart from
the client's.

Round trips are counted where they happen, in redis-py's ``send_packed_command`` (sync and
async), so our stores and ``limits`` are counted the same way (a pipeline counts once).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import redis
import redis.asyncio
import redis.asyncio.connection
import redis.connection
from limits import RateLimitItemPerMinute, strategies
from limits import storage as limits_storage
from limits.aio import storage as limits_aio_storage
from limits.aio import strategies as aio_strategies

from benchmarks.args import REQUESTS, ROUNDS, bench_parser
from contract.params import Bounds
from harness.processes.redis_server import RedisServer
from targets.algorithms import ALGORITHMS, Policy
from targets.cli_args import number
from targets.redact import redact_url
from targets.stores.redis.modes import LeasedStore
from targets.stores.redis.scripts import SUFFIXES
from targets.stores.redis.store import AsyncRedisStore, RedisStore

LIMIT, WINDOW_S, KEYS = 100, 60.0, 50
BLOCK = 100
"""Decisions per block of an interleaved measurement (concurrent clients: at least 4 each)."""
LIMITS_MATCH = {"fixed_window": strategies.FixedWindowRateLimiter, "sliding_log": strategies.MovingWindowRateLimiter,
                "sliding_window_counter": strategies.SlidingWindowCounterRateLimiter}
COLUMNS = ("sync", "async1", "async")
LIKE_FOR_LIKE = """\
What each side does per decision (one EVALSHA each, policy as above, cost 1, admits only):
- ours: reads Redis's clock (TIME) and the state, then writes it (fixed window: TIME + GET + SET
  where limits does one INCRBY), and returns exact remaining, retry-after and reset (the
  RateLimit headers) on windows aligned to floor(now / W); fractional costs, lease grants; the
  sliding log keeps exact cost-weighted running sums;
- limits: hit() returns only a bool (remaining and reset take more calls), integer costs only;
  FixedWindow is INCRBY (+ EXPIRE on a key's first hit: the window is the key's TTL),
  MovingWindow takes the client's clock and keeps one list entry per unit of cost,
  SlidingWindowCounter weights the previous window's count by its key's PTTL."""
AIO_MATCH: dict[str, Any] = {"fixed_window": aio_strategies.FixedWindowRateLimiter, "sliding_log": aio_strategies.MovingWindowRateLimiter,
             "sliding_window_counter": aio_strategies.SlidingWindowCounterRateLimiter}
ROUND_TRIPS = [0]


def _count_round_trips() -> None:
    sync_send = redis.connection.Connection.send_packed_command
    async_send = redis.asyncio.connection.Connection.send_packed_command

    @functools.wraps(sync_send)
    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        ROUND_TRIPS[0] += 1
        return sync_send(self, *args, **kwargs)

    @functools.wraps(async_send)
    async def async_counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        ROUND_TRIPS[0] += 1
        return await async_send(self, *args, **kwargs)

    redis.connection.Connection.send_packed_command = counted  # type: ignore[method-assign]
    redis.asyncio.connection.Connection.send_packed_command = async_counted  # type: ignore[method-assign]


def keys() -> list[str]:
    run = uuid.uuid4().hex[:8]
    return [f"bench-{run}-{i}" for i in range(KEYS)]


@dataclass
class Cell:
    """One row: how to decide with one sync client (None: async only) and how to get an async
    decide callable (called anew per measurement, so a leased node starts without leases)."""

    label: str
    sync: Callable[[str], Any] | None
    make_async: Callable[[], Callable[[str], Awaitable[Any]]]
    rounds: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    """Per column, (decisions/s, round trips per decision) of every round."""
    server_us: list[float] = field(default_factory=list)
    """Per round, Redis's own µs per EVALSHA during the sync measurement (commandstats)."""

    def median(self, column: str) -> tuple[float, float] | None:
        if column not in self.rounds:
            return None
        results = self.rounds[column]
        return statistics.median(r[0] for r in results), statistics.median(r[1] for r in results)


@dataclass
class Tally:
    """One cell's share of an interleaved measurement."""

    decisions: int = 0
    seconds: float = 0.0
    round_trips: int = 0
    evalsha_calls: int = 0
    evalsha_us: int = 0

    def result(self) -> tuple[float, float]:
        return self.decisions / self.seconds, self.round_trips / self.decisions


def evalsha_stats(stats: redis.Redis) -> tuple[int, int]:
    """(calls, µs) of EVALSHA so far, from INFO commandstats: the server's side of a decision."""
    evalsha = stats.info("commandstats").get("cmdstat_evalsha", {})
    return evalsha.get("calls", 0), evalsha.get("usec", 0)


def block_order(cells: list[Any], block: int) -> list[Any]:
    """ABBA order: a drift of the machine's speed weighs on every cell alike."""
    return cells if block % 2 == 0 else cells[::-1]


def measure_sync(decides: list[Callable[[str], Any]], n: int, stats: redis.Redis) -> list[Tally]:
    """``n`` decisions per callable, in blocks of BLOCK that alternate between the callables;
    commandstats is read between blocks (outside the timing and the round-trip count)."""
    ks, tallies = keys(), [Tally() for _ in decides]
    for decide in decides:
        for k in ks[:5]:
            decide(k)  # load the script, open the connection
    for b in range(n // BLOCK):
        for decide, tally in block_order(list(zip(decides, tallies, strict=True)), b):
            calls, usec = evalsha_stats(stats)
            start_rt, start = ROUND_TRIPS[0], time.perf_counter()
            for i in range(b * BLOCK, (b + 1) * BLOCK):
                decide(ks[i % KEYS])
            tally.seconds += time.perf_counter() - start
            tally.round_trips += ROUND_TRIPS[0] - start_rt
            tally.decisions += BLOCK
            calls_after, usec_after = evalsha_stats(stats)
            tally.evalsha_calls += calls_after - calls
            tally.evalsha_us += usec_after - usec
    return tallies


async def measure_async(decides: list[Callable[[str], Awaitable[Any]]], n: int, clients: int) -> list[Tally]:
    """``n`` decisions per callable from ``clients`` concurrent clients, in blocks (BLOCK
    decisions, or 4 per client if more) that alternate between the callables."""
    warm, ks, tallies = keys(), keys(), [Tally() for _ in decides]
    for decide in decides:
        await asyncio.gather(*(decide(warm[c % KEYS]) for c in range(clients)))  # open every connection first
    per_client = max(4, BLOCK // clients)
    size = per_client * clients

    async def client(decide: Callable[[str], Awaitable[Any]], first: int) -> None:
        for i in range(first, first + per_client):
            await decide(ks[i % KEYS])

    for b in range(n // size):
        for decide, tally in block_order(list(zip(decides, tallies, strict=True)), b):
            start_rt, start = ROUND_TRIPS[0], time.perf_counter()
            await asyncio.gather(*(client(decide, b * size + c * per_client) for c in range(clients)))
            tally.seconds += time.perf_counter() - start
            tally.round_trips += ROUND_TRIPS[0] - start_rt
            tally.decisions += size
    return tallies


def our_cells(sync_client: Any, async_client: Any, batch: int) -> list[Cell]:
    cells = []
    for name in SUFFIXES:
        algorithm = ALGORITHMS[name]
        params = algorithm.params_from_policy(Policy(LIMIT, WINDOW_S))
        store = RedisStore(sync_client, algorithm, params, namespace="bench")
        astore = AsyncRedisStore(async_client, algorithm, params, namespace="bench")
        if algorithm.release is None:
            cells.append(Cell(name, store.decide, lambda astore=astore: astore.decide))
            continue

        def pair(k: str, store: RedisStore = store) -> None:
            store.decide(k)
            store.release(k)

        async def apair(k: str, astore: AsyncRedisStore = astore) -> None:
            await astore.decide(k)
            await astore.release(k)

        cells.append(Cell(f"{name} (acquire+release)", pair, lambda apair=apair: apair))
    for name in ("token_bucket", "fixed_window"):  # a limit that leases can fill: 100,000 per key
        algorithm = ALGORITHMS[name]
        astore = AsyncRedisStore(async_client, algorithm, algorithm.params_from_policy(Policy(1000 * LIMIT, WINDOW_S)),
                                 namespace="bench-leased")
        cells.append(Cell(f"leased {name} (batch {batch})", None,
                          lambda astore=astore: LeasedStore(astore, batch=batch).decide))
    return cells


def limits_cells(url: str, clients: int) -> list[Cell]:
    item = RateLimitItemPerMinute(LIMIT)
    aio_storage = limits_aio_storage.RedisStorage("async+" + url, implementation="redispy", max_connections=clients)
    cells = []
    for name, strategy in LIMITS_MATCH.items():
        limiter, aio_limiter = strategy(limits_storage.RedisStorage(url)), AIO_MATCH[name](aio_storage)

        async def ahit(k: str, aio_limiter: Any = aio_limiter) -> bool:
            return await aio_limiter.hit(item, k)

        cells.append(Cell(f"limits {strategy.__name__}", lambda k, limiter=limiter: limiter.hit(item, k), lambda ahit=ahit: ahit))
    return cells


async def measure(group: list[Cell], column: str, n: int, clients: int, stats: redis.Redis) -> None:
    """One round of one column for a cell alone or a cell and its ``limits`` match, interleaved."""
    if column == "sync":
        group = [cell for cell in group if cell.sync is not None]
        tallies = measure_sync([cell.sync for cell in group if cell.sync is not None], n, stats) if group else []
        for cell, tally in zip(group, tallies, strict=True):
            cell.rounds.setdefault(column, []).append(tally.result())
            cell.server_us.append(tally.evalsha_us / max(1, tally.evalsha_calls))
        return
    decides = [cell.make_async() for cell in group]
    tallies = await measure_async(decides, n, 1 if column == "async1" else clients)
    for cell, tally in zip(group, tallies, strict=True):
        cell.rounds.setdefault(column, []).append(tally.result())


async def measure_all(url: str, n: int, clients: int, batch: int, rounds: int) -> tuple[list[Cell], list[Cell]]:
    """Every cell, ``rounds`` times, rows in turn, so that a slow phase of a shared machine hits
    every row alike; an algorithm with a ``limits`` match is measured together with it, in
    alternating blocks. Returns our cells and the ``limits`` cells (in LIMITS_MATCH order)."""
    sync_client, stats = redis.Redis.from_url(url), redis.Redis.from_url(url)
    async_client = redis.asyncio.Redis.from_url(url, max_connections=clients)
    ours, theirs = our_cells(sync_client, async_client, batch), limits_cells(url, clients)
    match = dict(zip(LIMITS_MATCH, theirs, strict=True))
    for _ in range(rounds):
        for cell in ours:
            group = [cell, match[cell.label]] if cell.label in match else [cell]
            for column in COLUMNS:
                await measure(group, column, n, clients, stats)
    sync_client.close()
    stats.close()
    await async_client.aclose()
    return ours, theirs


def memory_rows(url: str) -> Iterator[tuple[str, int]]:
    client = redis.Redis.from_url(url)
    for name in SUFFIXES:
        algorithm = ALGORITHMS[name]
        store = RedisStore(client, algorithm, algorithm.params_from_policy(Policy(LIMIT, WINDOW_S)), namespace="bench-mem")
        key = uuid.uuid4().hex
        for _ in range(LIMIT):
            store.decide(key)
        yield name, sum(client.memory_usage(k) or 0 for k in store.codec.keys(key))
    item = RateLimitItemPerMinute(LIMIT)
    for strategy in LIMITS_MATCH.values():
        key = uuid.uuid4().hex
        limiter = strategy(limits_storage.RedisStorage(url))
        for _ in range(LIMIT):
            limiter.hit(item, key)
        yield f"limits {strategy.__name__}", sum(client.memory_usage(k) or 0 for k in client.scan_iter(match=f"*{key}*"))
    client.close()


def _fmt(m: tuple[float, float] | None) -> str:
    return f"{'(async only)':>16}" if m is None else f"{m[0]:>9,.0f} {m[1]:>6.3f}"


def ratio(ours: Cell, theirs: Cell, column: str) -> float:
    """Median over rounds of ours / limits decisions/s, each round's pair measured side by side."""
    return statistics.median(o[0] / t[0] for o, t in zip(ours.rounds[column], theirs.rounds[column], strict=True))


def run(url: str, n: int, clients: int, batch: int, rounds: int) -> None:
    _count_round_trips()
    print(f"Redis at {redact_url(url)}; {n} decisions per cell over {KEYS} keys, median of {rounds} interleaved rounds;"
          f" policy {LIMIT} per {WINDOW_S:g} s (leased rows: {1000 * LIMIT})")
    header = f"{'store / algorithm':44} {'1 sync client':>16} {'1 async client':>16} {f'{clients} async clients':>16}"
    print(header)
    print(f"{'':44} {'dec/s':>9} {'rt/dec':>6} {'dec/s':>9} {'rt/dec':>6} {'dec/s':>9} {'rt/dec':>6}")
    ours, theirs = asyncio.run(measure_all(url, n, clients, batch, rounds))
    for cell in ours + theirs:
        print(f"{cell.label:44} {' '.join(_fmt(cell.median(column)) for column in COLUMNS)}")
    print(f"\nours / limits, decisions/s: median of the {rounds} per-round ratios (>= 1.00: ours at least as fast)")
    print(f"{'algorithm vs limits strategy':56} {'1 sync':>7} {'1 async':>7} {f'{clients} async':>8}")
    by_label = {cell.label: cell for cell in ours}
    for (name, strategy), theirs_cell in zip(LIMITS_MATCH.items(), theirs, strict=True):
        r = [ratio(by_label[name], theirs_cell, column) for column in COLUMNS]
        print(f"{f'{name} vs {strategy.__name__}':56} {r[0]:>7.2f} {r[1]:>7.2f} {r[2]:>8.2f}")
    print("\n" + LIKE_FOR_LIKE)
    print("\nRedis's own time per EVALSHA (INFO commandstats, during the 1 sync client cells; median µs)")
    for cell in ours + theirs:
        if cell.server_us:
            print(f"{cell.label:44} {statistics.median(cell.server_us):>9.1f}")
    print(f"\nMEMORY USAGE after {LIMIT} admits on one key (bytes, all keys of the state)")
    for label, used in memory_rows(url):
        print(f"{label:44} {used:>9,}")


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser("redis", __doc__.split("\n\n")[0])
    parser.add_argument("--url", help="a Redis to use (default: start a redis-server of our own)")
    parser.add_argument("--decisions", type=number(int, REQUESTS), default=2000)
    parser.add_argument("--clients", type=number(int, Bounds(1, 10_000)), default=64)
    parser.add_argument("--batch", type=number(int, REQUESTS), default=100)
    parser.add_argument("--rounds", type=number(int, ROUNDS), default=7)
    args = parser.parse_args(argv)
    with contextlib.ExitStack() as stack:
        url = args.url or stack.enter_context(RedisServer()).url
        run(url, args.decisions, args.clients, args.batch, args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
