"""``run_bench.py bench peer-agreement [--peer NAME]``: how faithfully the suite's mapped model
predicts a peer target (NGINX ``limit_req`` by default; HAProxy; Envoy's local_ratelimit, one
bucket for every key; Traefik's rateLimit; each slowapi strategy, on memory or Redis: REDIS_URL,
else a redis-server of its own), request by request, on a seeded bursty schedule (``--pause-s``:
with idle gaps past a bucket's ttl).

The real peer (config generated from the policy) in front of a ``none`` target; one client sends
the schedule (bursts of 1..12 requests on 4 keys, exponential gaps) and tags every request. The
decisions the peer logged are compared with its mapped model (harness/campaign/peers/: NGINX's is
token_bucket, capacity = NGINX burst + 1, NGINX's refill) twice: on the peer's own decision times
(its clock: the mapping alone) and on the schedule's intended times (what ``simulate`` would
predict: mapping plus the network).
"""

from __future__ import annotations

import os
import random
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import httpx
from pandas import DataFrame
from rich.console import Console
from rich.table import Table

from benchmarks.args import SECONDS, bench_parser
from contract.params import Bounds
from harness.campaign.peers import PEERS, model_policy
from harness.live.peers import LIVE_PEERS, live_peer
from harness.live.peers.standalone import mapped_decisions, peer_before_none
from harness.processes.redis_server import RedisServer
from targets.algorithms import Policy, build_params, get_algorithm
from targets.cli_args import SEED_BOUNDS, number

KEYS = 4
PAUSE = Bounds(0, 60)


def schedule(seed: int, seconds: float, mean_gap_s: float, pause_s: float = 0.0,
             pause_every: int = 10) -> list[tuple[float, str, int]]:
    """(offset s, key, burst size) in time order; with ``pause_s``, every ``pause_every`` bursts
    the whole schedule goes idle that long (longer than a bucket's ttl: the idle-gap traffic)."""
    rng = random.Random(seed)
    out, t = [], 0.0
    while t < seconds:
        out.append((t, f"k{rng.randrange(KEYS)}", rng.randint(1, 12)))
        t += rng.expovariate(1 / mean_gap_s) + (pause_s if pause_s and len(out) % pause_every == 0 else 0.0)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser("peer-agreement", __doc__)
    parser.add_argument("--peer", choices=sorted(LIVE_PEERS), default="nginx")
    parser.add_argument("--seed", type=number(int, SEED_BOUNDS), default=1)
    parser.add_argument("--seconds", type=number(float, SECONDS), default=8.0)
    parser.add_argument("--limit", type=float, default=10, help="requests per --window-s (default 10 per 1 s)")
    parser.add_argument("--window-s", type=float, default=1.0)
    parser.add_argument("--burst", type=float, default=None, help="default 5 (slowapi: none, limits has no burst)")
    parser.add_argument("--versus", metavar="ALGORITHM", help="also compare a suite algorithm (under the policy itself)")
    parser.add_argument("--pause-s", type=number(float, PAUSE), default=0.0,
                        help="every 10 bursts, all keys idle this long (past Traefik's ttl: 2.5)")
    args = parser.parse_args(argv)
    spec = PEERS[args.peer]
    policy = Policy(args.limit, args.window_s, args.burst if args.burst is not None or spec.system == "slowapi" else 5)
    plan = schedule(args.seed, args.seconds, mean_gap_s=0.1, pause_s=args.pause_s)
    intended: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        with ExitStack() as stack:
            env = None
            if spec.uses_redis:  # REDIS_URL, else a redis-server of our own
                env = {**os.environ, "REDIS_URL": os.environ.get("REDIS_URL") or stack.enter_context(RedisServer()).url}
            url, logs = stack.enter_context(peer_before_none(args.peer, policy, Path(tmp), env=env))
            with httpx.Client(timeout=5) as http:
                start_wall, start = time.time(), time.monotonic()
                for n, (at, key, size) in enumerate(plan):
                    time.sleep(max(0.0, start + at - time.monotonic()))
                    for i in range(size):
                        rid = f"b{n}-{i}"
                        intended[rid] = start_wall + at
                        http.get(f"{url}/api/items", headers={"x-request-id": rid, "x-api-key": key})
            time.sleep(0.2)
        df = live_peer(args.peer).decisions(logs, store=spec.store).to_pandas()  # stopped: its log is complete
    own = mapped_decisions(args.peer, policy, df["t"], df["key"])
    by_plan = df.assign(intended=df["request_id"].map(intended)).sort_values("intended", kind="stable")
    planned = mapped_decisions(args.peer, policy, by_plan["intended"], by_plan["key"])
    model = model_policy(args.peer, policy)[0]
    table = Table(title=f"{args.peer} vs its model {model}, {policy.limit:g} per {policy.window_s:g} s, "
                        f"burst {policy.effective_burst:g}, "
                        f"{len(df):,} requests, {int(df['allowed'].sum()):,} admitted by {args.peer}")
    for column in ("model fed", "agreement", "disagreements"):
        table.add_column(column, justify="right" if column != "model fed" else "left")
    rows = [(f"{args.peer}'s own decision times", own, df["allowed"]),
            ("the schedule's intended times", planned, by_plan["allowed"])]
    if args.versus:
        rows.append((f"{args.versus} (not the model), {args.peer}'s own times",
                     mapped_decisions(args.peer, policy, df["t"], df["key"], instead=args.versus), df["allowed"]))
    for label, model, actual in rows:
        agree = sum(m == a for m, a in zip(model, actual))
        table.add_row(label, f"{agree / len(model):.2%}", f"{len(model) - agree:,}")
    Console().print(table)
    if df["delay_s"].gt(0).any():  # a peer that logs its holds (Traefik's Overhead)
        Console().print(holds_line(args.peer, policy, df), highlight=False)
    return 0


def holds_line(peer: str, policy: Policy, df: DataFrame) -> str:
    """The model's holds (its delay_s, on the peer's own times) beside the peer's logged ones, for
    the requests both admit: how many the model holds 1 ms or more, and how far the peer's differ."""
    algorithm, mapped = model_policy(peer, policy)
    decide, params, states, gaps, held = get_algorithm(algorithm).decide, build_params(algorithm, mapped), {}, [], 0
    for t, key, allowed, logged in zip(df["t"], df["key"], df["allowed"], df["delay_s"]):
        decision, states[key] = decide(states.get(key), float(t), 1.0, params)
        if decision.allowed and allowed and decision.delay_s >= 1e-3:
            held += 1
            gaps.append(abs(logged - decision.delay_s) * 1e3)
    if not gaps:
        return "holds: the model holds no admitted request 1 ms or more"
    gaps.sort()
    return (f"holds: {held} admitted requests the model holds 1 ms or more; {peer}'s logged hold differs by "
            f"{gaps[len(gaps) // 2]:.2f} ms at the median, {gaps[-1]:.2f} ms at most")
