"""``run_bench.py bench core``: decisions per second per algorithm on the memory store, side by
side with the ``limits`` library's equivalent strategies in the same run; the simulator's replay
time for 1,000,000 requests; and, per algorithm, a replay with the whole system model around it
(network, target processes, downstream, client log: harness/sim/system.py) against the memory
store's decisions/s, measured in turns (A B A B ... A), with the ratio and whether it reaches
the goal (at least a quarter).

Both sides read a clock per decision and cycle over the same 1,000 keys with L=100 per 60 s, so
both admit and reject. Measurements are interleaved (ours, theirs, ours, ...) and the median of
``repeat`` rounds is reported, because this machine is shared and noisy.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from rich.console import Console
from rich.table import Table

from benchmarks.args import REQUESTS, ROUNDS, bench_parser
from harness.sim.simulator import client_table, replay, simulate
from harness.sim.system import system_for
from scenarios import TrafficModel, build_model
from targets.algorithms import ALGORITHMS, Policy, build_params
from targets.cli_args import number
from targets.stores.memory import MemoryStore

LIMIT, WINDOW = 100, 60
MODEL_GOAL = 0.25
"""The full model's requests/s over the memory store's decisions/s each algorithm should reach."""
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
    _decision_table(n, repeat, console)
    model = _steady(sim_requests)
    _simulator_table(model, console)
    _model_vs_store_table(model, n, repeat, console)


def _decision_table(n: int, repeat: int, console: Console) -> None:
    """The memory store's decisions/s per algorithm beside ``limits``'."""
    table = Table(title=f"decisions/s on the memory store (median of {repeat}, {n:,} decisions each, 1,000 keys)")
    for col in ("algorithm", "ratelimit-bench", "limits equivalent", "limits", "ratio"):
        table.add_column(col, justify="left" if col in ("algorithm", "limits equivalent") else "right")
    for algorithm in ALGORITHMS:
        ours_fn, theirs_name = _ours(algorithm, n), LIMITS_EQUIVALENT.get(algorithm)
        theirs_fn = _theirs(theirs_name, n) if theirs_name else None
        ours, theirs = [], []
        for _ in range(repeat):
            ours.append(ours_fn())
            if theirs_fn:
                theirs.append(theirs_fn())
        o = statistics.median(ours)
        if theirs:
            t = statistics.median(theirs)
            table.add_row(algorithm, f"{o:,.0f}", theirs_name, f"{t:,.0f}", f"{o / t:.1f}x")
        else:
            table.add_row(algorithm, f"{o:,.0f}", "-", "-", "-")
    console.print(table)


def _steady(sim_requests: int) -> TrafficModel:
    """1,000 clients at L = 100/s each for as long as ``sim_requests`` takes, arrivals generated
    (and cached) here, so that only replays are timed."""
    clients = 1000
    model = build_model("steady", LIMIT, 1.0, 1, {"clients": str(clients), "load": "1.0",
                                                  "duration_s": str(sim_requests / (clients * LIMIT))})
    model.arrivals()
    return model


def _simulator_table(model: TrafficModel, console: Console) -> None:
    """The replay alone, and with the ideal replay and the decision log (one run each)."""
    arrivals, policy = model.arrivals(), Policy(LIMIT, 1.0)
    sim = Table(title=f"simulator: {len(arrivals):,} requests (steady, 1,000 keys) through one algorithm")
    for col in ("algorithm", "replay s", "replay + ideal + log s", "replay req/s"):
        sim.add_column(col, justify="left" if col == "algorithm" else "right")
    for algorithm in ALGORITHMS:
        params = build_params(algorithm, policy)
        start = time.perf_counter()
        replay(model, ALGORITHMS[algorithm], params)
        replay_s = time.perf_counter() - start
        start = time.perf_counter()
        simulate(model, algorithm, policy, params)
        full_s = time.perf_counter() - start
        sim.add_row(algorithm, f"{replay_s:.2f}", f"{full_s:.2f}", f"{len(arrivals) / replay_s:,.0f}")
    console.print(sim)


def _full_model(model: TrafficModel, algorithm: str) -> Callable[[], float]:
    """Requests/s of a replay through the whole system model, its client log built."""
    params = build_params(algorithm, Policy(LIMIT, 1.0))
    system, requests = system_for(model, algorithm), len(model.arrivals())

    def run() -> float:
        start = time.perf_counter()
        client_table(replay(model, ALGORITHMS[algorithm], params, system=system))
        return requests / (time.perf_counter() - start)

    return run


def _model_vs_store_table(model: TrafficModel, n: int, repeat: int, console: Console) -> None:
    """Per algorithm, A B A B ... A: the memory store's decisions/s (A) around each full-model
    replay (B), so a machine whose speed drifts moves both sides of each ratio alike; a round's
    ratio is B over the mean of the two A beside it, and the table gives the medians."""
    table = Table(title=f"full model (downstream, target, client log) vs the memory store, interleaved, "
                        f"median of {repeat}: goal ratio >= {MODEL_GOAL}")
    for col in ("algorithm", "memory store decisions/s", "full model requests/s", "ratio", f">= {MODEL_GOAL}"):
        table.add_column(col, justify="left" if col == "algorithm" else "right")
    for algorithm in ALGORITHMS:
        store_fn, model_fn = _ours(algorithm, n), _full_model(model, algorithm)
        stores, models = [store_fn()], []
        for _ in range(repeat):
            models.append(model_fn())
            stores.append(store_fn())
        ratio = statistics.median(b / ((a1 + a2) / 2) for b, a1, a2 in zip(models, stores, stores[1:]))
        table.add_row(algorithm, f"{statistics.median(stores):,.0f}", f"{statistics.median(models):,.0f}",
                      f"{ratio:.2f}", "yes" if ratio >= MODEL_GOAL else "no")
    console.print(table)


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser("core", __doc__.splitlines()[0])
    parser.add_argument("--requests", type=number(int, REQUESTS), default=200_000, help="decisions per measurement")
    parser.add_argument("--repeat", type=number(int, ROUNDS), default=5, help="measurements per algorithm (median reported)")
    parser.add_argument("--sim-requests", type=number(int, REQUESTS), default=1_000_000)
    args = parser.parse_args(argv)
    run_core_bench(args.requests, args.repeat, args.sim_requests, Console())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
