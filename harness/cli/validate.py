"""`run_bench.py validate POLICY [--live]`: a pre-rollout gate for a rate limit policy file.

Lints the file for known pitfalls, replays the policy in virtual time with its own traffic
expectations and, with ``--live``, over HTTP against a real target, and checks the thresholds;
exit 0 pass, 1 fail, 2 invalid policy, 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from contract.atomic import write_text
from harness.campaign.config_file import CampaignError, check_out
from harness.campaign.policy_file import PolicyFile, load_policy
from harness.live.supervise import Interrupted
from harness.validate.checks import CheckVerdict, run_checks
from harness.validate.lints import run_lints
from harness.validate.live import LiveOutcome, run_live
from harness.validate.live_checks import live_verdicts
from harness.validate.report import suggestions, to_json, to_junit, verdict_table

from . import term_table
from .progress import RunProgress

EXIT_PASS, EXIT_FAIL, EXIT_INTERRUPTED = 0, 1, 130


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("validate", help="gate a rate limit policy file before rollout (lints + simulated checks)")
    p.add_argument("policy", type=Path, help="policy YAML (see docs/validate.md, campaigns/policies/)")
    p.add_argument("--live", action="store_true",
                   help="also replay the traffic over HTTP against a target built from the policy (P99, CPU, ...)")
    p.add_argument("--out", type=Path, metavar="DIR", help="--live: keep the live results folder (and its report) here")
    p.add_argument("--json", metavar="PATH|-", help="write the verdict as JSON ('-' for stdout)")
    p.add_argument("--junit", type=Path, metavar="PATH", help="write JUnit XML (one testcase per check)")
    p.set_defaults(func=cmd_validate)


def validate(policy: PolicyFile) -> list[CheckVerdict]:
    """Every lint, then every simulated check that applies: the whole verdict."""
    return run_lints(policy) + run_checks(policy)


def cmd_validate(args: argparse.Namespace) -> int:
    policy = load_policy(args.policy)
    if args.out is not None and not args.live:
        raise CampaignError("--out: only with --live (it keeps the live results folder)")
    check_out(args.out)
    to_stdout = args.json == "-"
    console = term_table.console(stderr=to_stdout)
    started = time.perf_counter()
    if args.live:
        console.print("lints and simulated checks", style="dim", highlight=False)
    verdicts = validate(policy)
    live: LiveOutcome | None = None
    if args.live:
        try:
            with RunProgress(console) as progress:
                live = run_live(policy, args.out, lambda text: console.print(text, style="dim", highlight=False),
                                progress.events)
        except Interrupted as exc:
            kept = f"; partial results in {args.out}" if args.out else ""
            console.print(f"interrupted ({exc}): the target and Locust are stopped{kept}", highlight=False)
            return EXIT_INTERRUPTED
        verdicts += live_verdicts(policy, live, verdicts)
    seconds = time.perf_counter() - started
    doc = to_json(policy.name, str(args.policy), verdicts, live)
    if to_stdout:
        sys.stdout.write(doc)
    elif args.json:
        write_text(Path(args.json), doc)
    if args.junit is not None:
        write_text(args.junit, to_junit(policy.name, verdicts, seconds))
    console.print(verdict_table(policy.name, verdicts))
    for text in suggestions(verdicts):
        console.print(text, highlight=False)
    for note in live.plan.notes if live else ():
        console.print(f"note: {note}", highlight=False)
    if live and live.folder:
        console.print(f"live results: {live.folder} (report.html)", highlight=False)
    return EXIT_PASS if all(v.passed for v in verdicts) else EXIT_FAIL
