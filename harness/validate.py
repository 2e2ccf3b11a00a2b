"""`run_bench.py validate POLICY`: a pre-rollout gate for a rate limit policy file.

Lints the file for known pitfalls, replays the policy in virtual time with its own traffic
expectations and checks the thresholds; exit 0 pass, 1 fail, 2 invalid policy.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from rich.console import Console

from .policy_file import PolicyFile, load_policy
from .results import write_text
from .sim_campaign import ConfigError
from .validate_checks import Verdict, run_checks
from .validate_lints import run_lints
from .validate_report import suggestions, to_json, to_junit, verdict_table

EXIT_PASS, EXIT_FAIL = 0, 1
LIVE_UNAVAILABLE = ("--live: live validation needs the live campaign runner (`run_bench.py run`), which is not "
                    "built yet; run without --live for the simulated checks")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("validate", help="gate a rate limit policy file before rollout (lints + simulated checks)")
    p.add_argument("policy", type=Path, help="policy YAML (see docs/validate.md, campaigns/policies/)")
    p.add_argument("--live", action="store_true", help="also replay over HTTP against a live target (needs `run`)")
    p.add_argument("--json", metavar="PATH|-", help="write the verdict as JSON ('-' for stdout)")
    p.add_argument("--junit", type=Path, metavar="PATH", help="write JUnit XML (one testcase per check)")
    p.set_defaults(func=cmd_validate)


def validate(policy: PolicyFile) -> list[Verdict]:
    """Every lint, then every simulated check that applies: the whole verdict."""
    return run_lints(policy) + run_checks(policy)


def cmd_validate(args: argparse.Namespace) -> int:
    if args.live:
        raise ConfigError(LIVE_UNAVAILABLE)
    policy = load_policy(args.policy)
    started = time.perf_counter()
    verdicts = validate(policy)
    seconds = time.perf_counter() - started
    to_stdout = args.json == "-"
    if to_stdout:
        sys.stdout.write(to_json(policy.name, str(args.policy), verdicts))
    elif args.json:
        write_text(Path(args.json), to_json(policy.name, str(args.policy), verdicts))
    if args.junit is not None:
        write_text(args.junit, to_junit(policy.name, verdicts, seconds))
    console = Console(stderr=to_stdout, width=None if sys.stdout.isatty() else 160)
    console.print(verdict_table(policy.name, verdicts))
    for text in suggestions(verdicts):
        console.print(text, highlight=False)
    return EXIT_PASS if all(v.passed for v in verdicts) else EXIT_FAIL
