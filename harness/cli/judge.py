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
import math
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from contract.atomic import write_text
from contract.folder import utc_stamp
from contract.paths import check_output
from contract.schema import JUDGE_LOG
from contract.urls import check_http_url
from harness.campaign.config_file import check_out
from harness.judge import keys
from harness.judge.endpoint import (
    MAX_RATE,
    MAX_REQUESTS,
    MAX_TIME_S,
    MAX_WAIT_S,
    TIMEOUT_S,
    CapReached,
    HttpEndpoint,
    JudgeError,
    KeySpec,
)
from harness.judge.verdict import client_log, judge, measurement, render
from targets.algorithms import Policy, PolicyError

from .judge_progress import JudgeProgress


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("judge", help="judge any endpoint's rate limit from outside: fingerprint, worst case, header truth")
    p.add_argument("url", help="the limited endpoint (a cost-1 GET), e.g. http://127.0.0.1:8000/api/items")
    p.add_argument("--key", default="auto", metavar="auto|ip|header:NAME[=PREFIX]",
                   help="how the limiter tells clients apart (default auto: found first, by changing the source "
                        "address or one header at a time after a refusal; ip: each probe from its own 127.x.y.z; "
                        "header:X-API-Key: each probe a fresh value PREFIX<run>-<n>)")
    p.add_argument("--claim", metavar="L/W",
                   help="the limit you believe it enforces, e.g. 20/10 (20 per 10 s): the worst case is searched in "
                        "its window and held to its L, said as the claim's")
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
    claimed(args.claim)


def claimed(text: str | None) -> Policy | None:
    """``--claim L/W`` (W in seconds, an ``s`` allowed): L at least 1, W above 0, both finite."""
    if text is None:
        return None
    limit, _, window = text.partition("/")
    try:
        policy = Policy(float(limit), float(window.strip().removesuffix("s")))
    except (ValueError, PolicyError):
        policy = None
    if policy is None or not (math.isfinite(policy.limit) and policy.limit >= 1 and math.isfinite(policy.window_s)):
        raise JudgeError(f"--claim {text!r}: expected L/W, a limit of at least 1 per a window in seconds above 0 (20/10)")
    return policy


def write_json(target: str | None, doc: dict[str, Any]) -> None:
    if target is None:
        return
    text = json.dumps(doc, indent=2, allow_nan=False) + "\n"
    if target == "-":
        sys.stdout.write(text)
    else:
        write_text(Path(target), text)


def keyed_by(found: keys.Found, loopback: bool) -> KeySpec:
    """The key the judgement sends by: the one found; one counter for everyone cannot be judged
    with a client per probe."""
    spec = found.spec()
    if found.per_connection and not loopback:
        raise JudgeError(f"{found.sentence()}: off loopback the judge sends its keys from one address, over shared "
                         "connections, so it cannot give each client a connection of its own")
    if spec is not None:
        return spec
    if found.settled:
        raise JudgeError(f"{found.sentence()}: the judge sends each probe as a client of its own, so it cannot judge a "
                         "limit it cannot give a fresh client (give --key if the key is a header it did not try)")
    return KeySpec() if loopback else KeySpec(keys.HEADERS[1])  # nothing found: the judgement says what it can


def _said(given: str, spec: KeySpec) -> str:
    what = "the source address" if spec.header is None else f"the {spec.header} header"
    return f"{what} (--key {given})" if given != "auto" else f"{what} (the key found)"


def _key_doc(found: keys.Found | None) -> dict[str, Any] | None:
    if found is None:
        return None
    return {"keys": list(found.keys), "tried": list(found.tried), "admitted_before_refused": found.admitted,
            "refused": found.refused, "rounds": found.rounds, "sentence": found.sentence()}


def cmd_judge(args: argparse.Namespace) -> int:
    check_args(args)
    if args.json not in (None, "-"):
        check_output(Path(args.json), "--json", folder=False)
    given = None if args.key == "auto" else KeySpec.parse(args.key)
    endpoint = HttpEndpoint(args.url, given or KeySpec(keys.HEADERS[1]), args.max_requests, args.max_rate, args.timeout,
                            args.max_time)
    found = None
    progress = JudgeProgress(Console(stderr=True), args.url, args.max_requests, args.max_time)
    endpoint.on_sent = progress.heard
    try:
        with progress:
            if given is None:
                found = keys.discover(endpoint)
                endpoint.keys = keyed_by(found, endpoint.loopback)
            verdict = judge(endpoint, args.max_wait, claimed(args.claim))
        if (wrong := keys.shared(endpoint.log, _said(args.key, endpoint.keys))) is not None:
            raise wrong
    except (JudgeError, CapReached) as exc:
        exc = keys.shared(endpoint.log, _said(args.key, endpoint.keys)) or exc
        error = str(exc) if isinstance(exc, JudgeError) else f"{exc.bound} was reached while the key was found"
        write_json(args.json, {**measurement(endpoint, None, error), "key": _key_doc(found)})
        raise exc if isinstance(exc, JudgeError) else JudgeError(f"{error}: raise {exc.flag}") from None
    finally:
        endpoint.close()
    folder = args.out or Path("results") / f"judge-{utc_stamp()}"
    folder.mkdir(parents=True, exist_ok=True)
    write_text(folder / JUDGE_LOG, client_log(endpoint))
    write_json(args.json, {**measurement(endpoint, verdict), "key": _key_doc(found)})
    said = f"key: {found.sentence()} ({len(endpoint.before)} requests)" if found else f"key: {args.key} (as given)"
    lines = [said, *render(verdict, args.url, str(folder / JUDGE_LOG))]
    print("\n".join(lines), file=sys.stderr if args.json == "-" else sys.stdout)
    return 1 if verdict.truth.findings else 0
