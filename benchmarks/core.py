"""``run_bench.py bench core``: decisions per second per algorithm on the memory store, side by
side with the ``limits`` library's equivalent strategies in the same run, then the simulator's
replay time for 1,000,000 requests, and with the whole system model around it (network, target
processes, downstream, client log: harness/sim/system.py) its requests/s against the memory
store's decisions/s of the same algorithm measured above (goal: at least a quarter).

Both sides read a clock per decision and cycle over the same 1,000 keys with L=100 per 60 s, so
both admit and reject. Measurements are interleaved (ours, theirs, ours, ...) and the median of
``repeat`` rounds is reported, because this machine is shared and noisy.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from rich.console import Console
from rich.table import Table

from harness.sim.simulator import client_table, replay, simulate
from harness.sim.system import system_for
from scenarios import build_model
from targets.algorithms import ALGORITHMS, Policy, build_params
from targets.stores.memory import MemoryStore

LIMIT, WINDOW = 100, 60
KEYS = [f"user-{i}" for i in range(1000)]
LIMITS_EQUIVALENT = {
    "fixed_window": "FixedWindowRateLimiter",
    "sliding_log": "MovingWindowRateLimiter",
    "sliding_window_counter": "SlidingWindowCounterRateLimiter",
}


def _ours(algorithm: str, n: int) -> Callable[[], float]:
    policy = Policy(LIMIT, WINDOW)

    def run() -> float:
        store = MemoryStore(ALGORITHMS[algorithm], build_params(algorithm, policy))
        decide, clock, keys = store.decide, time.monotonic, KEYS
        start = time.perf_counter()
        for i in range(n):
            decide(keys[i % 1000], clock(), 1)
        return n / (time.perf_counter() - start)

    return run


def _theirs(strategy: str, n: int) -> Callable[[], float]:
    from limits import RateLimitItemPerMinute, storage, strategies

    def run() -> float:
        limiter = getattr(strategies, strategy)(storage.MemoryStorage())
        item, hit, keys = RateLimitItemPerMinute(LIMIT), limiter.hit, KEYS
        start = time.perf_counter()
        for i in range(n):
            hit(item, keys[i % 1000])
        return n / (time.perf_counter() - start)

    return run


def run_core_bench(n: int, repeat: int, sim_requests: int, console: Console) -> None:
    store_rates = _decision_table(n, repeat, console)
    _simulator_table(sim_requests, store_rates, console)


def _decision_table(n: int, repeat: int, console: Console) -> dict[str, float]:
    """The memory store's decisions/s per algorithm (beside ``limits``'); returns ours."""
    table = Table(title=f"decisions/s on the memory store (median of {repeat}, {n:,} decisions each, 1,000 keys)")
    for col in ("algorithm", "ratelimit-bench", "limits equivalent", "limits", "ratio"):
        table.add_column(col, justify="left" if col in ("algorithm", "limits equivalent") else "right")
    rates: dict[str, float] = {}
    for algorithm in ALGORITHMS:
        ours_fn, theirs_name = _ours(algorithm, n), LIMITS_EQUIVALENT.get(algorithm)
        theirs_fn = _theirs(theirs_name, n) if theirs_name else None
        ours, theirs = [], []
        for _ in range(repeat):
            ours.append(ours_fn())
            if theirs_fn:
                theirs.append(theirs_fn())
        o = rates[algorithm] = statistics.median(ours)
        if theirs:
            t = statistics.median(theirs)
            table.add_row(algorithm, f"{o:,.0f}", theirs_name, f"{t:,.0f}", f"{o / t:.1f}x")
        else:
            table.add_row(algorithm, f"{o:,.0f}", "-", "-", "-")
    console.print(table)
    return rates


def _simulator_table(sim_requests: int, store_rates: dict[str, float], console: Console) -> None:
    sim = Table(title=f"simulator: {sim_requests:,} requests (steady, 1,000 keys) through one algorithm")
    for col in ("algorithm", "requests", "replay s", "replay + ideal + log s", "system + client log s",
                "system req/s", "vs memory store"):
        sim.add_column(col, justify="left" if col == "algorithm" else "right")
    clients = 1000
    duration = sim_requests / (clients * LIMIT / 1.0)
    policy = Policy(LIMIT, 1.0)
    model = build_model("steady", LIMIT, 1.0, 1, {"clients": str(clients), "load": "1.0",
                                                  "duration_s": str(duration)})
    arrivals = model.arrivals()  # generated once and cached: only the replay is timed
    for algorithm in ALGORITHMS:
        params = build_params(algorithm, policy)
        start = time.perf_counter()
        replay(model, ALGORITHMS[algorithm], params)
        replay_s = time.perf_counter() - start
        start = time.perf_counter()
        simulate(model, algorithm, policy, params)
        full_s = time.perf_counter() - start
        start = time.perf_counter()
        client_table(replay(model, ALGORITHMS[algorithm], params, system=system_for(model, algorithm)))
        system_s = time.perf_counter() - start
        rate = len(arrivals) / system_s
        sim.add_row(algorithm, f"{len(arrivals):,}", f"{replay_s:.2f}", f"{full_s:.2f}", f"{system_s:.2f}",
                    f"{rate:,.0f}", f"{rate / store_rates[algorithm]:.2f}")
    console.print(sim)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="run_bench.py bench core", description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200_000, help="decisions per measurement")
    parser.add_argument("--repeat", type=int, default=5, help="measurements per algorithm (median reported)")
    parser.add_argument("--sim-requests", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    run_core_bench(args.requests, args.repeat, args.sim_requests, Console())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
