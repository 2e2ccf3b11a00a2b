"""``run_bench.py bench eviction``: what a key-rotation flood buys a client in debt, with the
memory store bounded by key count, side by side with the same store unbounded (and with the
least-recently-used rule this store replaced).

In-process and in virtual time, so every figure is exact and repeatable: over 30 s a flood of
8,800 new keys per second (one request each) passes through a store of 10,000 keys, while one
bursty key sends 150 requests every 5 s against L=100 per 60 s. The bursty key is in debt after
its first burst and idle between bursts: exactly the key LRU forgets first. "debt forgiven" is
the quota evictions gave back (``MemoryStore.forgiven``), all keys together, in cost units.
"""

from __future__ import annotations

import sys

from rich.console import Console
from rich.table import Table

from benchmarks.args import bench_parser
from targets.algorithms import ALGORITHMS, Policy, build_params
from targets.stores.memory import MemoryStore

LIMIT, WINDOW = 100, 60.0
MAX_KEYS = 10_000
FLOOD_PER_S = 8_800
SECONDS = 30
BURST, EVERY_S = 150, 5
ALGORITHMS_COMPARED = ["fixed_window", "sliding_log", "sliding_window_counter", "sliding_window_ring", "token_bucket",
                       "leaky_bucket", "gcra"]


class LeastRecentlyUsed(MemoryStore):
    """The rule before: the least recently used key goes, whatever its state."""

    def _evict(self, now: float, keep: str) -> None:
        self._entries.popitem(last=False)
        self.evictions += 1


def bursty_admits(store: MemoryStore) -> int:
    """The bursty key's admitted requests while the flood runs."""
    decide, admitted, flood = store.decide, 0, 0
    per_burst = FLOOD_PER_S * EVERY_S
    for burst in range(SECONDS // EVERY_S):
        start = burst * EVERY_S
        admitted += sum(decide("bursty", start)[0] for _ in range(BURST))
        for i in range(per_burst):
            decide(f"flood-{flood}", start + i / FLOOD_PER_S)
            flood += 1
    return admitted


def run_eviction_bench(console: Console) -> None:
    table = Table(title=f"bursty key ({BURST} requests every {EVERY_S} s, L={LIMIT} per {WINDOW:g} s) under a flood of "
                        f"{FLOOD_PER_S:,} new keys/s for {SECONDS} s, max_keys {MAX_KEYS:,}: its admitted requests")
    for col in ("algorithm", "unbounded", "bounded", "ratio", "debt forgiven", "evictions", "LRU (before)", "LRU ratio"):
        table.add_column(col, justify="left" if col == "algorithm" else "right")
    for name in ALGORITHMS_COMPARED:
        params = build_params(name, Policy(LIMIT, WINDOW))
        unbounded = bursty_admits(MemoryStore(ALGORITHMS[name], params, max_keys=10**9))
        store = MemoryStore(ALGORITHMS[name], params, max_keys=MAX_KEYS)
        bounded = bursty_admits(store)
        lru = bursty_admits(LeastRecentlyUsed(ALGORITHMS[name], params, max_keys=MAX_KEYS))
        table.add_row(name, f"{unbounded:,}", f"{bounded:,}", f"{bounded / unbounded:.2f}x",
                      f"{store.forgiven:,.0f}", f"{store.evictions:,}", f"{lru:,}", f"{lru / unbounded:.2f}x")
    console.print(table)


def main(argv: list[str] | None = None) -> int:
    bench_parser("eviction", "a key in debt under a key-rotation flood: the memory store bounded vs unbounded").parse_args(argv)
    run_eviction_bench(Console(width=None if sys.stdout.isatty() else 160))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
