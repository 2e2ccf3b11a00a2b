"""``run_bench.py bench NAME [ARGS]``: the suite's own benchmarks (``benchmarks/``).

Each benchmark module parses its own ARGS (``run_bench.py bench NAME --help``) in ``main(argv)``,
every number that sizes its memory bounded as it is read (``benchmarks/args.py``: one line and
exit 2 past the bound), and prints its figures side by side with their comparison, measured in the same run. The
registry names modules, not functions: a benchmark is imported only when it runs (some import
the world), and nothing of the house imports ``benchmarks`` (it stands on top).
"""

from __future__ import annotations

import argparse
import importlib

BENCHMARKS: dict[str, tuple[str, str]] = {
    "core": ("benchmarks.core", "decisions/s per algorithm vs the limits library; the simulator's replay rate"),
    "live": ("benchmarks.live", "the load generator's ceiling and a burst's spread at the target"),
    "distributed": ("benchmarks.distributed", "generator CPU per request: 2 local Locust workers vs 1 remote worker over loopback"),
    "targets": ("benchmarks.targets", "throughput of every target vs the `none` target (wrk; --instructions: valgrind)"),
    "target-processes": ("benchmarks.target_processes", "decisions/s of a target node with 1 vs N processes on one port (wrk)"),
    "redis": ("benchmarks.redis_store", "Redis decisions/s vs limits (sync, async, 64 clients); round trips per mode"),
    "eviction": ("benchmarks.eviction", "a key in debt under a key-rotation flood: the memory store bounded vs unbounded (and LRU)"),
    "hostile": ("benchmarks.hostile", "a normal client's P99 under big heads, slowloris and a key flood; the in-debt key's admissions"),
    "analysis-10m": ("benchmarks.analysis_10m", "the report of a 10-million-row results folder: wall time, peak memory"),
    "peer-agreement": ("benchmarks.peer_agreement", "a peer (NGINX, HAProxy, Traefik, slowapi) vs its mapped model, per request"),
    "slot-overhead": ("benchmarks.slot_overhead", "what the live stack adds to each downstream call (the model's default) vs virtual time"),
    "twin": ("benchmarks.twin", "live vs virtual time: P99, admitted, rejected, sustained rate per run, with their ratio"),
    "store-deadline": ("benchmarks.store_deadline", "a target on Redis slowed or hung: P99 against the store budget, fallback share"),
    "twin-scale": ("benchmarks.twin_scale", "a live ramp campaign from another machine (16 cores) vs virtual time: sustained, P99 by rate"),
    "traffic": ("benchmarks.traffic", "access log parse rate per format; 5M combined lines x 3 policies: wall time, peak RSS"),
    "log-memory": ("benchmarks.log_memory", "peak RSS of reading, judging and replaying an access log at 100k and 1M lines, side by side"),
    "marginal-cpu": ("benchmarks.marginal_cpu", "a live run's marginal target CPU per request vs bench targets', per algorithm"),
    "judge": ("benchmarks.judge", "run_bench.py judge against every model in virtual time: seconds, requests, fit, worst case vs goals"),
    "judge-products": ("benchmarks.judge_products", "run_bench.py judge against live Traefik, Envoy, NGINX, HAProxy: named or "
                                                    "'no model fits', worst case vs the largest on the product's model"),
    "queue": ("benchmarks.queue", "the simulated downstream as M/M/8: its mean wait vs Erlang C at utilisation 0.5, 0.8, 0.95"),
    "validate": ("benchmarks.validate", "validate --config on each product file: seconds vs the 5 s goal; one-key run vs per request"),
    "orphans": ("benchmarks.orphans", "a live run SIGKILLed at 20 random moments: seconds until no process or port it started "
                                      "is left, vs the 2 s goal"),
    "adaptive": ("benchmarks.adaptive", "µs per request of each adaptive rule vs gradient2; a CPU reading's push at 1k-100k keys"),
}
"""NAME -> (module, what it measures)."""


def register(sub: argparse._SubParsersAction) -> None:
    bench = sub.add_parser("bench", help="the suite's own benchmarks (benchmarks/)",
                           epilog="; ".join(f"{name}: {what}" for name, (_, what) in BENCHMARKS.items()))
    bench.add_argument("what", choices=list(BENCHMARKS), metavar="NAME", help=", ".join(BENCHMARKS))
    bench.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS", help="the benchmark's own (bench NAME --help)")
    bench.set_defaults(func=cmd_bench)


def cmd_bench(args: argparse.Namespace) -> int:
    try:
        return importlib.import_module(BENCHMARKS[args.what][0]).main(args.args)
    except SystemExit as exc:  # its own parser (benchmarks/args.py): --help (0) or one line of bad input (2)
        if isinstance(exc.code, int):
            return exc.code
        raise
