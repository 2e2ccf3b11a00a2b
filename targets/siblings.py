"""The admin endpoints of a node of several processes (targets/multiprocess.py), as one.

Process 0 serves the node's admin port and reaches the others on their private admin ports:
``/_bench/counters`` is the sum over the processes (with each process's own under
``processes``), a health override is applied by every process (else only the connections the
kernel gave process 0 would see it), and ``/_bench/state?process=i`` reads process i's limiter
(on the memory store each process keeps its own state).
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

KEPT = frozenset({"max_keys", "factor"})
"""Numbers that are settings, the same in every process: kept, not summed."""
TIMEOUT_S = 2.0


def merge_counters(parts: list[Any], key: str | None = None) -> Any:
    """The processes' counters as the node's: counts summed, flags any, settings and names
    from process 0; keys present in some processes only are kept."""
    first = parts[0]
    if isinstance(first, dict):
        names = list(dict.fromkeys(k for p in parts if isinstance(p, dict) for k in p))
        return {k: merge_counters([p[k] for p in parts if isinstance(p, dict) and k in p], k) for k in names}
    if isinstance(first, bool):
        return any(bool(p) for p in parts)
    if isinstance(first, int | float) and key not in KEPT:
        return sum(p for p in parts if isinstance(p, int | float) and not isinstance(p, bool))
    return first


class Siblings:
    """The other processes' admin ports, over one kept-alive client: the runner reads the counters
    twice a second while the load runs, and a client per read opened N-1 new connections each
    time on the event loop that serves the load."""

    def __init__(self, urls: list[str]) -> None:
        self.urls = urls
        self._client = httpx.AsyncClient(timeout=TIMEOUT_S) if urls else None

    def __len__(self) -> int:
        return len(self.urls)

    async def fetch_all(self, method: str, path: str, urls: list[str] | None = None, **kwargs: Any) -> list[httpx.Response]:
        """The same admin request to every other process (or to ``urls``) at once; answers in order."""
        assert self._client is not None
        return list(await asyncio.gather(*(self._client.request(method, f"{url}{path}", **kwargs)
                                           for url in (self.urls if urls is None else urls))))
