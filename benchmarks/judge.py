"""``run_bench.py bench judge``: what ``run_bench.py judge`` costs and finds, for every model the
suite has standing in for an endpoint, against the goals: a session under 60 s and under 1,000
requests for a window of up to 10 s, the right model with L and W within 5%, and at least 1.9x
found on every window opened by a first request or aligned to the clock (no more than the
model's bound elsewhere).

In virtual time (``harness.judge.virtual``): each answer takes ``--service-ms`` of the endpoint's
clock and the session's waits are the hunt's own, so "seconds" is how long the same session takes
against a real endpoint that answers that fast, and the figures do not move with this machine's
load. Live sessions add their round trips (docs/peers.md has measured ones).
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from analysis.theory import over_admission_bound
from benchmarks.args import bench_parser
from contract.run_info import RunPolicy
from harness.judge.endpoint import MAX_REQUESTS
from harness.judge.verdict import EDGE_MODELS, judge
from harness.judge.virtual import VirtualEndpoint
from harness.sim.fingerprint import BUCKETED, IN_FLIGHT, MODELS
from targets.algorithms import Policy, PolicyError

GOAL_S, GOAL_SHARE, EDGE_WORTH = 60.0, 0.05, 1.9
"""The goals: seconds, L and W within this share, and at least 1.9x found on EDGE_MODELS (windows
aligned to the clock or opened by a key's first request)."""


def within(got: float, want: float) -> bool:
    return abs(got - want) <= GOAL_SHARE * want


def session(model: str, limit: int, window_s: float, service_s: float, max_wait_s: float) -> list[str]:
    """One judging session's row: seconds, requests, the fit and whether it is right, the worst case."""
    endpoint = VirtualEndpoint(model, Policy(limit, window_s, None), service_s=service_s, max_requests=MAX_REQUESTS,
                               headers=False)
    v = judge(endpoint, max_wait_s)
    fit, requests = v.best, sum(v.roles.values())
    named = model in (fit.model, *fit.alike)
    if model in BUCKETED:  # a bucket is its rate and its burst: L per W is one of many spellings
        sized = within(fit.policy.limit / fit.policy.window_s, limit / window_s) and within(fit.policy.effective_burst, limit)
    else:
        sized = within(fit.policy.limit, limit) and within(fit.policy.window_s, window_s)
    bound = over_admission_bound(model, RunPolicy(limit, window_s, endpoint.policy.effective_burst), {})
    ratio = v.worst.admitted / limit
    # a model with no closed-form bound (HAProxy's counter, limits' Redis counter) is held to none
    hunted = ratio >= EDGE_WORTH if model in EDGE_MODELS else bound is None or ratio <= bound + 1 / limit
    ok = v.seconds < GOAL_S and requests < MAX_REQUESTS and named and sized and hunted
    return [model, f"{limit} / {window_s:g} s", f"{v.seconds:.1f}", f"{requests:,}",
            f"{fit.model} {fit.policy.limit:g} / {fit.policy.window_s:.3g} s ({fit.agreement:.1%})",
            "yes" if named and sized else "NO", f"{ratio:.2f}x (bound {'-' if bound is None else f'{bound:.2f}x'})",
            "met" if ok else "MISSED"]


def main(argv: list[str]) -> int:
    parser = bench_parser("judge", __doc__.split("\n\n")[0])
    parser.add_argument("--window-s", type=float, default=10.0, help="W of every stand-in (default 10, the goal's longest)")
    parser.add_argument("--limits", type=int, nargs="+", default=[20, 100], help="L of the stand-ins (default 20 100)")
    parser.add_argument("--service-ms", type=float, default=2.0, help="how long each answer takes (default 2)")
    parser.add_argument("--max-wait", type=float, default=30.0, help="the judge's --max-wait (default 30)")
    args = parser.parse_args(argv)
    if args.window_s <= 0 or args.service_ms <= 0 or min(args.limits) < 1:
        parser.error("--window-s and --service-ms must be positive, --limits at least 1")
    table = Table(title=f"run_bench.py judge against each model in virtual time (answers in {args.service_ms:g} ms); "
                        f"goals: < {GOAL_S:g} s, < {MAX_REQUESTS:,} requests, model with L and W within 5%, "
                        f">= {EDGE_WORTH}x on {' and '.join(EDGE_MODELS)}")
    for column in ("endpoint", "L / W", "seconds", "requests", "fingerprint", "right", "worst case", "goals"):
        table.add_column(column, justify="right" if column in ("seconds", "requests") else "left")
    for model in (m for m in MODELS if m not in IN_FLIGHT and m != "none"):
        for limit in args.limits:
            try:
                row = session(model, limit, args.window_s, args.service_ms / 1000, args.max_wait)
            except PolicyError as e:  # a model this W (or its missing third parameter) cannot build
                row = [model, f"{limit} / {args.window_s:g} s", "-", "-", f"not built: {e}", "-", "-", "-"]
            table.add_row(*row)
    Console(width=200).print(table)
    return 0
