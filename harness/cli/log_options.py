"""The options that say how an access log is read, one definition for every command that reads
one (`validate --traffic LOG`, `simulate --trace LOG`): ``--format``, ``--log-format``, ``--field``."""

from __future__ import annotations

import argparse

from harness.campaign.config_file import CampaignError
from harness.campaign.log_traffic import LogOptions
from scenarios.access_log import FORMATS

FLAGS = "--format/--log-format/--field"


def add_log_options(group: argparse._ArgumentGroup, used_with: str) -> None:
    """``--format NAME``, ``--log-format STRING`` and ``--field NAME=FIELD`` (repeatable), each
    saying it applies to ``used_with`` (e.g. ``--traffic``)."""
    group.add_argument("--format", dest="log_name", choices=FORMATS, help=f"{used_with}: the log's format (default: detected)")
    group.add_argument("--log-format", metavar="STRING", help=f"{used_with}: the NGINX log_format string the log was written with")
    group.add_argument("--field", action="append", default=[], metavar="NAME=FIELD",
                       help=f"{used_with}: JSON lines field mapping, e.g. t=start_time,key=user_id (repeatable)")


def log_options(args: argparse.Namespace, log_given: bool, used_with: str) -> LogOptions:
    """The options given; any of them without a log to read (``log_given`` false): one line, exit 2."""
    options = LogOptions(args.log_name, args.log_format, tuple(args.field))
    if options.given and not log_given:
        raise CampaignError(f"{FLAGS}: only with {used_with}")
    return options
