"""The admin endpoints of a node of several processes (targets/multiprocess.py), as one.

Process 0 serves the node's admin port and reaches the others on their private admin ports:
``/_bench/counters`` is the sum over the processes (with each process's own under
``processes``), a health override is applied by every process (else only the connections the
kernel gave process 0 would see it), and ``/_bench/state?process=i`` reads process i's limiter
(on the memory store each process keeps its own state).
"""

from __future__ import annotations

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


async def fetch_all(method: str, urls: list[str], path: str, **kwargs: Any) -> list[httpx.Response]:
    """The same admin request to every other process, in order."""
    async with httpx.AsyncClient(timeout=TIMEOUT_S) as client:
        return [await client.request(method, f"{url}{path}", **kwargs) for url in urls]
