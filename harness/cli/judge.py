"""`run_bench.py judge URL`: any endpoint judged from outside, within caps a staging gateway takes.

Prints the fingerprint (which of the suite's models behaves like it, with its L and W), the
worst case the hunt found with the timestamps that prove it, and whether its limit fields told
the truth; writes every request it sent (role, key, address) to the client log. Exit 1 when a
limit field breaks the letter (``contract.limit_headers``: a Retry-After of "1.5", a RateLimit r
that is no integer), as ``validate --url`` fails it. Bad input, an endpoint that fails, times out,
needs a key, or never refuses, or answers what a limiter does not (a redirect, 401/403, 5xx); one
that cannot be reached, stalls (``--timeout``: each request's whole answer) or streams without
end (its body past a cap): one line, exit 2, the client log not written and the partial
measurement in ``--json``. The session as a whole ends within ``--max-time``: where that cuts
the hunt short, the verdict says so.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from contract.atomic import write_text
from contract.folder import utc_stamp
from contract.paths import check_output
from contract.schema import JUDGE_LOG
from contract.urls import check_http_url
from harness.campaign.config_file import check_out
from harness.judge.endpoint import (
    MAX_RATE,
    MAX_REQUESTS,
    MAX_TIME_S,
    MAX_WAIT_S,
    TIMEOUT_S,
    HttpEndpoint,
    JudgeError,
    KeySpec,
)
from harness.judge.verdict import client_log, judge, measurement, render


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
    p.add_argument("--timeout", type=float, default=TIMEOUT_S,
                   help=f"seconds per answer, all of it: status line, headers and body (default {TIMEOUT_S:g})")
    p.add_argument("--max-time", type=float, default=MAX_TIME_S,
                   help=f"seconds for the whole session; past it the hunt stops and says so (default {MAX_TIME_S:g})")
    p.add_argument("--json", metavar="PATH|-", help="write the measurement and verdict as JSON ('-' for stdout); "
                                                    "kept when the session ends in an error")
    p.add_argument("--out", type=Path,
                   help=f"a new or empty folder for the client log {JUDGE_LOG} (default results/judge-<UTC time>)")
    p.set_defaults(func=cmd_judge)


def check_args(args: argparse.Namespace) -> None:
    """Everything the user gave, before a request is sent: the caps, the URL (its port, no CR or
    LF), and a new or empty --out that can be written (not found after the whole session)."""
    for name, value, low in (("--max-requests", args.max_requests, 10), ("--max-rate", args.max_rate, 1.0),
                             ("--max-wait", args.max_wait, 0.1), ("--timeout", args.timeout, 0.01),
                             ("--max-time", args.max_time, 1.0)):
        if not value >= low:
            raise JudgeError(f"{name} {value:g}: must be at least {low:g}")
    check_http_url(args.url, "URL", JudgeError)
    check_out(args.out)


def write_json(target: str | None, doc: dict[str, Any]) -> None:
    if target is None:
        return
    text = json.dumps(doc, indent=2, allow_nan=False) + "\n"
    if target == "-":
        sys.stdout.write(text)
    else:
        write_text(Path(target), text)


def cmd_judge(args: argparse.Namespace) -> int:
    check_args(args)
    if args.json not in (None, "-"):
        check_output(Path(args.json), "--json", folder=False)
    endpoint = HttpEndpoint(args.url, KeySpec.parse(args.key), args.max_requests, args.max_rate, args.timeout,
                            args.max_time)
    try:
        verdict = judge(endpoint, args.max_wait)
    except JudgeError as exc:
        write_json(args.json, measurement(endpoint, None, str(exc)))
        raise
    finally:
        endpoint.close()
    folder = args.out or Path("results") / f"judge-{utc_stamp()}"
    folder.mkdir(parents=True, exist_ok=True)
    write_text(folder / JUDGE_LOG, client_log(endpoint))
    write_json(args.json, measurement(endpoint, verdict))
    print("\n".join(render(verdict, args.url, str(folder / JUDGE_LOG))), file=sys.stderr if args.json == "-" else sys.stdout)
    return 1 if verdict.truth.findings else 0
