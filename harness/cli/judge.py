"""`run_bench.py judge URL`: any endpoint judged from outside, within caps a staging gateway takes.

Prints the fingerprint (which of the suite's models behaves like it, with its L and W), the
worst case the hunt found with the timestamps that prove it, and whether its limit fields told
the truth; writes every request it sent (role, key, address) to the client log. Exit 1 when a
limit field breaks the letter (``contract.limit_headers``: a Retry-After of "1.5", a RateLimit r
that is no integer), as ``validate --url`` fails it. Bad input, an endpoint that fails, times out,
needs a key, or never refuses: one line, exit 2, nothing written.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from contract.atomic import write_text
from contract.folder import utc_stamp
from contract.schema import JUDGE_LOG
from harness.judge.endpoint import MAX_RATE, MAX_REQUESTS, MAX_WAIT_S, TIMEOUT_S, HttpEndpoint, JudgeError, KeySpec
from harness.judge.verdict import client_log, judge, render


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("judge", help="judge any endpoint's rate limit from outside: fingerprint, worst case, header truth")
    p.add_argument("url", help="the limited endpoint (a cost-1 GET), e.g. http://127.0.0.1:8000/api/items")
    p.add_argument("--key", default="ip", metavar="ip|header:NAME[=PREFIX]",
                   help="how the limiter tells clients apart (default ip: each probe from its own 127.x.y.z; "
                        "header:X-API-Key: each probe a fresh value PREFIX<run>-<n>)")
    p.add_argument("--max-requests", type=int, default=MAX_REQUESTS, help=f"cap on requests (default {MAX_REQUESTS})")
    p.add_argument("--max-rate", type=float, default=MAX_RATE, help=f"cap on requests per second (default {MAX_RATE:g})")
    p.add_argument("--max-wait", type=float, default=MAX_WAIT_S,
                   help=f"seconds to wait for a key's quota to come back (default {MAX_WAIT_S:g})")
    p.add_argument("--timeout", type=float, default=TIMEOUT_S, help=f"seconds per answer (default {TIMEOUT_S:g})")
    p.add_argument("--out", type=Path, help=f"folder for the client log {JUDGE_LOG} (default results/judge-<UTC time>)")
    p.set_defaults(func=cmd_judge)


def check_caps(args: argparse.Namespace) -> None:
    for name, value, low in (("--max-requests", args.max_requests, 10), ("--max-rate", args.max_rate, 1.0),
                             ("--max-wait", args.max_wait, 0.1), ("--timeout", args.timeout, 0.01)):
        if not value >= low:
            raise JudgeError(f"{name} {value:g}: must be at least {low:g}")
    if not args.url.startswith(("http://", "https://")):
        raise JudgeError(f"URL {args.url!r}: expected http://HOST[:PORT]/PATH")


def cmd_judge(args: argparse.Namespace) -> int:
    check_caps(args)
    endpoint = HttpEndpoint(args.url, KeySpec.parse(args.key), args.max_requests, args.max_rate, args.timeout)
    try:
        verdict = judge(endpoint, args.max_wait)
    finally:
        endpoint.close()
    folder = args.out or Path("results") / f"judge-{utc_stamp()}"
    folder.mkdir(parents=True, exist_ok=True)
    write_text(folder / JUDGE_LOG, client_log(endpoint))
    print("\n".join(render(verdict, args.url, str(folder / JUDGE_LOG))))
    return 1 if verdict.truth.findings else 0
