"""``run_bench.py bench adaptive``: what each adaptive rule costs per request, side by side with
the ``gradient2`` baseline, and what one CPU/load reading costs the target at 1k, 10k and 100k
keys, side by side with folding it into every key's state (the way it was done before).

In-process and interleaved: every rule runs in each round, and the best round counts, so a busy
machine slows all of them alike; the ratios are the figures to read.

- per request: ``decide`` + ``observe`` + ``release`` of one key, a request every 1 ms answering in
  20-26 ms, through the algorithm's pure functions (no store, no HTTP);
- per push: ``readings.push`` (every 250 ms on the target's event loop) against the same reading
  folded into every key of the store under its lock.
"""

from __future__ import annotations

import time

from rich.console import Console
from rich.table import Table

from benchmarks.args import REQUESTS, ROUNDS, bench_parser
from targets.algorithms import adaptive
from targets.algorithms.adaptive_rules import RULES, Reading
from targets.cli_args import number
from targets.config import TargetConfig
from targets.layers import build_layers
from targets.readings import push

BASELINE = "gradient2"
KEYS = (1_000, 10_000, 100_000)
READING_RULES = ("gozero", "sentinel_bbr")


def per_request_us(p: adaptive.Params, n: int) -> float:
    """µs per admitted-or-refused request: decide, then (if admitted) observe and release."""
    decide, observe, release = adaptive.decide, adaptive.observe, adaptive.release
    s, now = None, 1.7e9
    start = time.perf_counter()
    for i in range(n):
        now += 0.001
        d, s = decide(s, now, 1.0, p)
        if d.allowed:
            s = observe(s, now + 0.02, 0.02 + (i % 7) * 0.001, p)
            s = release(s, now + 0.02, 1.0, p)
    return (time.perf_counter() - start) / n * 1e6


def rule_table(n: int, rounds: int) -> Table:
    variants = {name: adaptive.Params(max_limit=16, initial_limit=16, rule=name) for name in RULES}
    variants["gradient2 window=average"] = adaptive.Params(max_limit=16, initial_limit=16, window="average")
    best: dict[str, float] = {}
    for _ in range(rounds):
        for name, p in variants.items():
            best[name] = min(best.get(name, float("inf")), per_request_us(p, n))
    table = Table(title=f"µs per request (decide + observe + release), best of {rounds} interleaved rounds of {n:,}")
    for column in ("rule", "µs/request", f"vs {BASELINE}"):
        table.add_column(column, justify="left" if column == "rule" else "right")
    for name, us in best.items():
        table.add_row(name, f"{us:.2f}", f"x{us / best[BASELINE]:.2f}")
    return table


def _fold_into_every_key(layers: list, now: float, reading: Reading) -> None:
    """The comparison: the reading folded into every key's state under the store's lock."""
    for layer in layers:
        for variant in layer.variants.values():
            store = variant.store
            with store._lock:
                for entry in store._entries.values():
                    entry[0] = adaptive.observe_reading(entry[0], now, reading, store.params)


def push_table() -> Table:
    table = Table(title="one CPU/load reading (every 250 ms on the event loop), ms")
    for column in ("rule", "keys", "push (one per store)", "fold into every key", "ratio"):
        table.add_column(column, justify="left" if column == "rule" else "right")
    now = time.time()
    for rule in READING_RULES:
        config = TargetConfig.model_validate({"algorithm": "adaptive", "limit": 100, "window_s": 1, "burst": 8,
                                              "limits": [{"name": "adaptive", "scope": "ip", "params": {"rule": rule}}]})
        layers = build_layers(config)[0]
        store = layers[0].variants[None].store
        for keys in KEYS:
            while len(store) < keys:
                store.decide(f"10.0.{len(store)}", now, 1)
            reading = Reading(cpu=0.5, load=1.0)
            start = time.perf_counter()
            push(layers, now, reading)
            one = time.perf_counter() - start
            start = time.perf_counter()
            _fold_into_every_key(layers, now, reading)
            every = time.perf_counter() - start
            table.add_row(rule, f"{keys:,}", f"{one * 1e3:.3f}", f"{every * 1e3:.1f}", f"x{every / one:,.0f}")
    return table


def main(argv: list[str]) -> int:
    parser = bench_parser("adaptive", __doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=number(int, REQUESTS), default=20_000, help="requests per rule per round (default 20,000)")
    parser.add_argument("--rounds", type=number(int, ROUNDS), default=3, help="interleaved rounds; the best counts (default 3)")
    args = parser.parse_args(argv)
    console = Console()
    console.print(rule_table(args.requests, args.rounds))
    console.print(push_table())
    return 0
