"""``run_bench.py bench judge-products``: ``run_bench.py judge`` against the real products the
suite runs (Traefik, Envoy, NGINX, HAProxy), each configured with the same limit, against the
goals: the behaviour named with its parameters within 5%, or "no model fits" said; never a fit
of 95% or more with a worst case under half the true one; a worst case at least 90% of the
largest any traffic gets through in a window of the claimed length; within 120 s and 600 requests.

Each product runs as the suite runs it (``peer_before_none``: the product on loopback in front of
a ``none`` target) and is judged by the command a user types (``judge URL --claim L/W --json``),
in a process of its own. "The largest any traffic gets" is searched on the product's model
(harness/campaign/peers/: each model follows the product's source, per request to 99% or more
in ``bench peer-agreement``): bursts of 1 to 2B requests repeated after pauses from W/100 to 2W
(just under W and W/2 among them: a clock window's two edges),
and steady rates from 1x to 4x L/W, each for 3W at two phases of the clock second; the most one
key gets admitted in any W. A grid, not a proof: the judge's own worst case can exceed it, and
the row then says so. Envoy's local limit is one bucket for every client: the judge says it
found one counter for everyone and cannot judge it with a client per probe, which is the right
answer for it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from analysis.metrics import max_window_cost
from benchmarks.args import SECONDS, bench_parser
from benchmarks.judge import GOAL_SHARE, within
from harness.campaign.peers import model_policy
from harness.live.peers.standalone import model_decisions, peer_before_none
from harness.sim.fingerprint import BUCKETED
from targets.algorithms import Policy, build_params, get_algorithm
from targets.cli_args import number

PRODUCTS = ("traefik", "envoy", "nginx", "haproxy")
POLICY = Policy(20, 10.0, 20)
"""20 per 10 s, burst 20: the configuration whose Traefik the judge once called a sliding log at 1.00x."""
GOAL_S, GOAL_REQUESTS, GOAL_WORST = 120.0, 600, 0.9
T0 = 1_760_000_000.0
ROOT = Path(__file__).resolve().parents[1]


def shapes(policy: Policy) -> list[np.ndarray]:
    """The traffic the largest admitted is searched over (module doc), as times from ``T0``."""
    w, burst, rate = policy.window_s, policy.effective_burst, policy.limit / policy.window_s
    sizes = sorted({1, 2, max(1, int(burst) // 2), int(burst), int(burst) + 1, 2 * int(burst), int(policy.limit)})
    gaps = np.unique(np.concatenate([np.geomspace(w / 100, 2 * w, 40), [1.0, 2.0, 2.2, 3.0, w / 2, 0.51 * w, 0.99 * w, w]]))
    out = []
    for phase in (0.0, 0.5):
        for size in sizes:
            for gap in gaps:
                starts = np.arange(0.0, 3 * w, gap)
                out.append(T0 + phase + (starts[:, None] + np.arange(size) * 1e-4).ravel())
        for factor in (1.0, 1.5, 2.0, 3.0, 4.0):
            out.append(T0 + phase + np.arange(0.0, 3 * w, 1 / (rate * factor)))
    return out


def largest(algorithm: str, policy: Policy) -> int:
    """The most one key of ``algorithm`` under ``policy`` admits in any W over ``shapes``."""
    decide, params = get_algorithm(algorithm).decide, build_params(algorithm, policy)
    best = 0
    for times in shapes(policy):
        allowed = np.array(model_decisions(decide, params, times.tolist(), ["k"] * len(times)))
        best = max(best, round(max_window_cost(times[allowed], np.ones(int(allowed.sum())), policy.window_s)))
    return best


def judged(product: str, policy: Policy, folder: Path, max_wait_s: float) -> tuple[dict, float]:
    """The product judged by ``run_bench.py judge`` as a user runs it: (its --json, wall seconds)."""
    out = folder / "judge.json"
    with peer_before_none(product, policy, folder / "peer") as (url, _logs):
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "run_bench.py", "judge", f"{url}/api/items", "--claim",
                               f"{policy.limit:g}/{policy.window_s:g}", "--max-wait", f"{max_wait_s:g}", "--json", str(out),
                               "--out", str(folder / "judge")], cwd=ROOT, capture_output=True, text=True, timeout=GOAL_S * 3)
        seconds = time.perf_counter() - start
    if not out.exists():  # no measurement written: the judge failed before its session (its last line says why)
        said = (proc.stderr.strip() or proc.stdout.strip() or f"exit {proc.returncode}").splitlines()[-1]
        return {"error": said, "verdict": None, "requests": 0}, seconds
    return json.loads(out.read_text()), seconds


def right(algorithm: str, policy: Policy, verdict: dict) -> bool:
    """The product's own model named, with L and W (a bucket: its rate and burst) within 5%."""
    if verdict["model"] != algorithm:
        return False
    if algorithm in BUCKETED:
        return within(verdict["limit"] / verdict["window_s"], policy.limit / policy.window_s) and within(
            verdict["burst"], policy.effective_burst)
    return within(verdict["limit"], policy.limit) and within(verdict["window_s"], policy.window_s)


def row(product: str, policy: Policy, doc: dict, seconds: float) -> list[str]:
    algorithm, mapped = model_policy(product, policy)
    most = largest(algorithm, mapped)
    v = doc["verdict"]
    requests = doc["requests"]
    cost = f"{seconds:.0f} s, {requests:,}"
    within = seconds < GOAL_S and requests < GOAL_REQUESTS
    if v is None:  # the judge stopped with a sentence (one counter for everyone, a cap)
        said = doc["error"] or "no verdict"
        one_counter = "one counter for everyone" in said
        honest = one_counter and algorithm == "envoy_local_ratelimit"  # one bucket per process, every client in it
        said = "one counter for everyone found: not judged with a client per probe" if one_counter else said[:100]
        return [product, f"{algorithm} {mapped.limit:g}/{mapped.window_s:g} s", said, "yes" if honest else "no",
                f"- / {most}", cost, "met" if honest and within else "MISSED"]
    named = right(algorithm, mapped, v)
    fit = (f"{v['model']} {v['limit']:g}/{v['window_s']:.3g} s burst {v['burst']:g} "
           f"({v['fitted_agreement']:.0%} fitted, {v['held_back_agreement'] or 0:.0%} held back)")
    said = fit if v["explained"] else f"no model fits (best: {fit})"
    share = v["worst_admitted"] / most
    confident_wrong = v["fitted_agreement"] >= 0.95 and v["explained"] and share < 0.5
    ok = (named or not v["explained"]) and not confident_wrong and share >= GOAL_WORST and within
    return [product, f"{algorithm} {mapped.limit:g}/{mapped.window_s:g} s", said, "yes" if named else "no",
            f"{v['worst_admitted']} / {most} ({share:.0%})", cost, "met" if ok else "MISSED"]


def main(argv: list[str]) -> int:
    parser = bench_parser("judge-products", __doc__.split("\n\n")[0])
    parser.add_argument("--products", nargs="+", choices=PRODUCTS, default=list(PRODUCTS), help="which (default all four)")
    parser.add_argument("--max-wait", type=number(float, SECONDS), default=30.0, help="the judge's --max-wait (default 30)")
    args = parser.parse_args(argv)
    table = Table(title=f"run_bench.py judge against the real products, each at {POLICY.limit:g} per {POLICY.window_s:g} s, "
                        f"burst {POLICY.effective_burst:g}; goals: named within {GOAL_SHARE:.0%} or 'no model fits', "
                        f"worst case >= {GOAL_WORST:.0%} of the largest on the model, < {GOAL_S:g} s, < {GOAL_REQUESTS} requests",
                  title_justify="left")
    for column in ("product", "its model", "the judge said", "right", "worst case / largest", "seconds, requests", "goals"):
        table.add_column(column)
    with tempfile.TemporaryDirectory(prefix="bench-judge-products-") as tmp:
        for product in args.products:
            folder = Path(tmp) / product
            folder.mkdir()
            table.add_row(*row(product, POLICY, *judged(product, POLICY, folder, args.max_wait)))
    Console(width=220).print(table)
    return 0
