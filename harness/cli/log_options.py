"""The options that say how an access log is read, one definition for every command that reads
one (`validate --traffic LOG`, `simulate --trace LOG`): ``--format``, ``--log-format``, ``--field``,
and the reader's bounds ``--max-line-bytes``, ``--max-bad-share``, ``--accept-truncated``."""

from __future__ import annotations

import argparse

from contract.params import Bounds
from harness.campaign.config_file import CampaignError
from harness.campaign.log_traffic import LogOptions
from scenarios.access_log import FORMATS, ReadBounds
from scenarios.access_log.stream import MAX_BAD_SHARE, MAX_LINE_BYTES
from targets.cli_args import number

LINE_BYTES = Bounds(256, 64 << 20)
"""A line longer than 64 MiB is never a log line; one bound per line keeps a block's memory known."""
BAD_SHARE = Bounds(0.0, 1.0)

FLAGS = "--format/--log-format/--field"


def add_log_options(group: argparse._ArgumentGroup, used_with: str) -> None:
    """``--format NAME``, ``--log-format STRING`` and ``--field NAME=FIELD`` (repeatable), each
    saying it applies to ``used_with`` (e.g. ``--traffic``)."""
    group.add_argument("--format", dest="log_name", choices=FORMATS, help=f"{used_with}: the log's format (default: detected)")
    group.add_argument("--log-format", metavar="STRING", help=f"{used_with}: the NGINX log_format string the log was written with")
    group.add_argument("--field", action="append", default=[], metavar="NAME=FIELD",
                       help=f"{used_with}: JSON lines field mapping, e.g. t=start_time,key=user_id (repeatable)")
    group.add_argument("--max-line-bytes", type=number(int, LINE_BYTES), default=MAX_LINE_BYTES, metavar="N",
                       help=f"{used_with}: a longer line is counted and skipped (default {MAX_LINE_BYTES:,})")
    group.add_argument("--max-bad-share", type=number(float, BAD_SHARE), default=MAX_BAD_SHARE, metavar="SHARE",
                       help=f"{used_with}: refuse a log whose unusable lines pass this share (default {MAX_BAD_SHARE})")
    group.add_argument("--accept-truncated", action="store_true",
                       help=f"{used_with}: a gzip cut short or failing its CRC: judge the lines read before it")


def log_options(args: argparse.Namespace, log_given: bool, used_with: str) -> LogOptions:
    """The options given; any of them without a log to read (``log_given`` false): one line, exit 2."""
    options = LogOptions(args.log_name, args.log_format, tuple(args.field),
                         ReadBounds(args.max_line_bytes, args.max_bad_share, args.accept_truncated))
    if options.given and not log_given:
        raise CampaignError(f"{FLAGS}: only with {used_with}")
    return options
