"""A TCP proxy on loopback that holds every chunk the server sends for a set time, or forever:
a slow or hung store (Redis) made without touching the store, so a test or a benchmark can put
the target's store deadline (targets/stores/redis/failover.py) to work at 5, 50 or 500 ms, or
against a server that stops answering without closing.

Each chunk is held ``delay_s`` from when it arrived, not from when the previous one left, so
pipelined answers are not delayed cumulatively; ``delay_s`` may change while it runs (a store
healthy while its client starts, then slow). The proxy is a process of its own (forked, its
lifetime bound to its parent's: contract/lifetime.py): on a thread of a busy caller its replies
would wait for the caller's GIL and look like a slow store.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import time
from multiprocessing.sharedctypes import Synchronized
from types import TracebackType

from contract.lifetime import die_with_parent

STALL: None = None
"""``delay_s`` of a server that never answers (the requests still reach it; nothing comes back)."""
_STALLED = -1.0
"""How the shared value spells STALL."""


class DelayProxy:
    def __init__(self, upstream: tuple[str, int], delay_s: float | None) -> None:
        context = multiprocessing.get_context("fork")
        self._delay: Synchronized = context.Value("d", _STALLED if delay_s is STALL else delay_s, lock=False)
        self._port: Synchronized = context.Value("i", 0, lock=False)
        self._process = context.Process(target=_serve_forever, args=(upstream, self._delay, self._port, os.getpid()),
                                        daemon=True)

    @property
    def address(self) -> tuple[str, int]:
        return "127.0.0.1", self._port.value

    @property
    def delay_s(self) -> float | None:
        return STALL if self._delay.value < 0 else self._delay.value

    @delay_s.setter
    def delay_s(self, value: float | None) -> None:
        self._delay.value = _STALLED if value is STALL else value

    def __enter__(self) -> DelayProxy:
        self._process.start()
        deadline = time.monotonic() + 10.0
        while not self._port.value:
            if time.monotonic() > deadline or not self._process.is_alive():
                self.close()
                raise RuntimeError("the delay proxy did not start within 10 s")
            time.sleep(0.01)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        if self._process.is_alive():
            self._process.kill()
        if self._process.pid is not None:
            self._process.join(10.0)


def _serve_forever(upstream: tuple[str, int], delay: Synchronized, port: Synchronized, parent: int) -> None:
    die_with_parent(parent)
    asyncio.run(_main(upstream, delay, port))


async def _main(upstream: tuple[str, int], delay: Synchronized, port: Synchronized) -> None:
    async def serve(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            server_r, server_w = await asyncio.open_connection(*upstream)
        except OSError:
            client_w.close()
            return
        held: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()
        tasks = [asyncio.create_task(_pump(client_r, server_w)), asyncio.create_task(_hold(server_r, held)),
                 asyncio.create_task(_release(held, client_w, delay))]
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            task.cancel()
        for writer in (client_w, server_w):
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port.value = server.sockets[0].getsockname()[1]
    async with server:
        await server.serve_forever()


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while data := await reader.read(65536):
        writer.write(data)
        await writer.drain()


async def _hold(reader: asyncio.StreamReader, held: asyncio.Queue[tuple[float, bytes]]) -> None:
    while data := await reader.read(65536):
        held.put_nowait((time.monotonic(), data))


async def _release(held: asyncio.Queue[tuple[float, bytes]], client_w: asyncio.StreamWriter, delay: Synchronized) -> None:
    """Each held chunk to the client ``delay`` after it arrived; never while stalled (it waits
    for the delay to change: a stalled chunk still goes once the store answers again)."""
    while True:
        arrived, data = await held.get()
        while delay.value < 0:
            await asyncio.sleep(0.05)
        await asyncio.sleep(max(0.0, arrived + delay.value - time.monotonic()))
        client_w.write(data)
        await client_w.drain()
