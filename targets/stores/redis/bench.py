"""Redis store benchmark: ``python -m targets.stores.redis.bench [--url URL] [--decisions N]``.

Per algorithm: decisions/s with one sync client and with 64 concurrent asyncio clients, round
trips per decision, side by side with the ``limits`` library's Redis storage on the matching
algorithms (fixed window, moving window = sliding log, sliding window counter), in the same run
against the same server; then the leased mode; then MEMORY USAGE of each algorithm's state after
100 admits on one key (limit 100). Without ``--url`` it starts a redis-server of its own.

Round trips are counted where they happen, in redis-py's ``send_packed_command`` (sync and
async), so our stores and ``limits`` are counted the same way (a pipeline counts once).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
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

from harness.redis_server import RedisServer

from ...algorithms import ALGORITHMS, Policy
from .modes import LeasedStore
from .scripts import SUFFIXES
from .store import AsyncRedisStore, RedisStore

LIMIT, WINDOW_S, KEYS = 100, 60.0, 50
LIMITS_MATCH = {"fixed_window": strategies.FixedWindowRateLimiter, "sliding_log": strategies.MovingWindowRateLimiter,
                "sliding_window_counter": strategies.SlidingWindowCounterRateLimiter}
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
    best: dict[str, tuple[float, float]] = field(default_factory=dict)

    def keep(self, column: str, result: tuple[float, float]) -> None:
        if column not in self.best or result[0] > self.best[column][0]:
            self.best[column] = result


def measure_sync(decide: Callable[[str], Any], n: int) -> tuple[float, float]:
    ks = keys()
    for k in ks[:5]:
        decide(k)  # load the script, open the connection
    start_rt, start = ROUND_TRIPS[0], time.perf_counter()
    for i in range(n):
        decide(ks[i % KEYS])
    return n / (time.perf_counter() - start), (ROUND_TRIPS[0] - start_rt) / n


async def measure_async(decide: Callable[[str], Awaitable[Any]], n: int, clients: int) -> tuple[float, float]:
    warm = keys()
    await asyncio.gather(*(decide(warm[c % KEYS]) for c in range(clients)))  # open every connection first
    ks = keys()
    per_client = n // clients

    async def client(c: int) -> None:
        for i in range(per_client):
            await decide(ks[(c * per_client + i) % KEYS])

    start_rt, start = ROUND_TRIPS[0], time.perf_counter()
    await asyncio.gather(*(client(c) for c in range(clients)))
    done = per_client * clients
    return done / (time.perf_counter() - start), (ROUND_TRIPS[0] - start_rt) / done


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

        cells.append(Cell(f"limits {name}", lambda k, limiter=limiter: limiter.hit(item, k), lambda ahit=ahit: ahit))
    return cells


async def measure_all(url: str, n: int, clients: int, batch: int, rounds: int) -> list[Cell]:
    """Every cell, ``rounds`` times, interleaved so that a slow phase of a shared machine hits
    every row alike; each cell keeps its best round."""
    sync_client = redis.Redis.from_url(url)
    async_client = redis.asyncio.Redis.from_url(url, max_connections=clients)
    cells = [*our_cells(sync_client, async_client, batch), *limits_cells(url, clients)]
    for _ in range(rounds):
        for cell in cells:
            if cell.sync is not None:
                cell.keep("sync", measure_sync(cell.sync, n))
            cell.keep("async1", await measure_async(cell.make_async(), n, 1))
            cell.keep("async", await measure_async(cell.make_async(), n, clients))
    sync_client.close()
    await async_client.aclose()
    return cells


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
    for name, strategy in LIMITS_MATCH.items():
        key = uuid.uuid4().hex
        limiter = strategy(limits_storage.RedisStorage(url))
        for _ in range(LIMIT):
            limiter.hit(item, key)
        yield f"limits {name}", sum(client.memory_usage(k) or 0 for k in client.scan_iter(match=f"*{key}*"))
    client.close()


def _fmt(m: tuple[float, float]) -> str:
    return f"{m[0]:>9,.0f} {m[1]:>6.3f}"


def _fmt(m: tuple[float, float] | None) -> str:
    return f"{'(async only)':>16}" if m is None else f"{m[0]:>9,.0f} {m[1]:>6.3f}"


def run(url: str, n: int, clients: int, batch: int, rounds: int) -> None:
    _count_round_trips()
    print(f"Redis at {url}; {n} decisions per cell over {KEYS} keys, best of {rounds} interleaved rounds;"
          f" policy {LIMIT} per {WINDOW_S:g} s (leased rows: {1000 * LIMIT})")
    print(f"{'store / algorithm':44} {'1 sync client':>16} {'1 async client':>16} {f'{clients} async clients':>16}")
    print(f"{'':44} {'dec/s':>9} {'rt/dec':>6} {'dec/s':>9} {'rt/dec':>6} {'dec/s':>9} {'rt/dec':>6}")
    for cell in asyncio.run(measure_all(url, n, clients, batch, rounds)):
        b = cell.best
        print(f"{cell.label:44} {_fmt(b.get('sync'))} {_fmt(b['async1'])} {_fmt(b['async'])}")
    print(f"\nMEMORY USAGE after {LIMIT} admits on one key (bytes, all keys of the state)")
    for label, used in memory_rows(url):
        print(f"{label:44} {used:>9,}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="a Redis to use (default: start a redis-server of our own)")
    parser.add_argument("--decisions", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        url = args.url or stack.enter_context(RedisServer()).url
        run(url, args.decisions, args.clients, args.batch, args.rounds)


if __name__ == "__main__":
    main()
