"""``run_bench.py bench queue``: the simulated downstream (``harness.sim.downstream_model``) as an
M/M/c queue, its mean wait against Erlang C at utilisation 0.5, 0.8 and 0.95.

Each seed is a million Poisson arrivals into 8 slots with exponential service times (the first
10% left out as warm-up). One seed's mean wait is an estimate with a spread of its own, and near
saturation that spread is wide: at 0.95 the queue relaxes over thousands of requests, so a million
hold only a few hundred independent stretches (seeds 1-16: one seed from -7.1% to +11.1% of
Erlang C, a standard deviation of 5.5%; 2.1% even at 0.5). The goal (within 2%) is judged on the mean
over ``--seeds`` seeds, with its standard error beside it; the seed-to-seed range shows what one
seed alone would say. Pure computation: the figures do not move with the machine's load.
"""

from __future__ import annotations

import math
import time

import numpy as np
from rich.console import Console
from rich.table import Table

from benchmarks.args import REQUESTS, ROUNDS, bench_parser
from contract.params import Bounds
from harness.sim.downstream_model import DownstreamModel
from targets.cli_args import number
from targets.config import DownstreamConfig

SLOTS, MEAN_S, GOAL = 8, 0.01, 0.02
UTILISATIONS = (0.5, 0.8, 0.95)


def erlang_c_wait(c: int, lam: float, mu: float) -> float:
    """Mean wait in queue of M/M/c (Erlang C)."""
    a = lam / mu
    rho = a / c
    top = a ** c / math.factorial(c) / (1 - rho)
    p_wait = top / (sum(a ** k / math.factorial(k) for k in range(c)) + top)
    return p_wait / (c * mu - lam)


class Exponential(DownstreamModel):
    """The downstream's queue with exponential service times (M/M/c), for Erlang C."""

    def __init__(self, c: int, mean_s: float, n: int, seed: int) -> None:
        super().__init__(DownstreamConfig.model_validate({"concurrency": c, "service_time": {"median_ms": 1, "sigma": 0}}),
                         seed)
        self.draws = iter(np.random.default_rng(seed + 1).exponential(mean_s, n).tolist())

    def service_time(self, start: float) -> float:
        return next(self.draws)


def mean_wait(rho: float, n: int, seed: int, c: int = SLOTS, mean_s: float = MEAN_S) -> float:
    """The mean wait in queue (s) of ``n`` Poisson arrivals at utilisation ``rho`` into the
    model's ``c`` slots, after the first 10% (the queue starts empty)."""
    lam = rho * c / mean_s
    arrivals = np.cumsum(np.random.default_rng(seed).exponential(1 / lam, n)).tolist()
    model = Exponential(c, mean_s, n, seed + 14)
    starts = []
    for a in arrivals:
        starts.append(max(a, model.slots[0]))  # the earliest free slot: where the model serves it
        model.serve(a)
    return float((np.array(starts) - np.array(arrivals))[n // 10:].mean())


def row(rho: float, n: int, seeds: int) -> list[str]:
    """Erlang C, one seed's range, the mean over ``seeds`` with its standard error, the goal."""
    theory = erlang_c_wait(SLOTS, rho * SLOTS / MEAN_S, 1 / MEAN_S)
    errors = np.array([mean_wait(rho, n, seed) / theory - 1 for seed in range(1, seeds + 1)])
    mean, stderr = errors.mean(), errors.std(ddof=1) / math.sqrt(seeds) if seeds > 1 else math.nan
    return [f"{rho:g}", f"{theory * 1000:.3f}", f"{errors.min():+.2%} .. {errors.max():+.2%}",
            f"{errors.std(ddof=1):.2%}" if seeds > 1 else "-", f"{mean:+.2%} (+-{stderr:.2%})",
            "met" if abs(mean) <= GOAL else "MISSED"]


def main(argv: list[str]) -> int:
    parser = bench_parser("queue", __doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=number(int, Bounds(1000, REQUESTS.high)), default=1_000_000,
                        help="arrivals per seed (default 1,000,000)")
    parser.add_argument("--seeds", type=number(int, ROUNDS), default=16, help="seeds per utilisation (default 16)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    table = Table(title=f"M/M/{SLOTS} in the simulated downstream vs Erlang C: {args.seeds} seeds x "
                        f"{args.requests:,} requests per utilisation, service {MEAN_S * 1000:g} ms; goal: mean within "
                        f"{GOAL:.0%}")
    for column in ("utilisation", "Erlang C wait ms", "one seed: range", "one seed: std",
                   f"mean of {args.seeds} (std error)", "goal"):
        table.add_column(column, justify="right")
    for rho in UTILISATIONS:
        table.add_row(*row(rho, args.requests, args.seeds))
    Console(width=160).print(table)
    print(f"{args.seeds * len(UTILISATIONS) * args.requests:,} requests simulated in {time.perf_counter() - started:.0f} s")
    return 0
