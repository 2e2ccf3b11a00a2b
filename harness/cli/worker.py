"""``run_bench.py worker --master HOST:PORT``: join a campaign's load from this machine
(``harness.live.worker``); the campaign runs with ``run_bench.py run --remote-workers N``."""

from __future__ import annotations

import argparse
from pathlib import Path

from contract.params import Bounds
from contract.paths import check_output
from harness.live.remote import parse_address
from harness.live.worker import follow_campaign
from targets.cli_args import number

GIVE_UP_S = 120.0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("worker", help="join a live campaign's load from this machine (a remote Locust worker)")
    p.add_argument("--master", required=True, metavar="HOST:PORT",
                   help="the campaign's master (run_bench.py run --remote-workers N --master-bind HOST:PORT)")
    p.add_argument("--give-up", type=number(float, Bounds(0.001, 86_400)), default=GIVE_UP_S, metavar="S",
                   help="stop when no master gives a plan for this long (default: %(default)g s)")
    p.add_argument("--dir", type=Path, help="working directory for the worker's own log (default: a fresh temporary one)")
    p.set_defaults(func=cmd_worker)


def cmd_worker(args: argparse.Namespace) -> int:
    host, port = parse_address(args.master, "--master")
    if args.dir is not None:
        check_output(args.dir, "--dir", folder=True)
    return follow_campaign(host, port, args.give_up, args.dir)
