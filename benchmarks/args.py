"""What every benchmark's command line shares: one parser whose mistakes are one line and exit 2
(``targets.cli_args.Parser``, as ``run_bench.py``'s own), and the bounds of the numbers that size
a benchmark's memory, checked as each argument is read, before anything is allocated (the one
parameter parser's ``Bounds``: the value and the bound in the message)."""

from __future__ import annotations

import shutil
import tempfile

from contract.memory import bound_of
from contract.params import Bounds
from harness.campaign.system import MAX_VIRTUAL_REQUESTS, REQUEST_BYTES
from targets.cli_args import Parser

REQUESTS = Bounds(1, bound_of(MAX_VIRTUAL_REQUESTS, REQUEST_BYTES))
"""Requests, decisions or rows one benchmark holds: the simulator's memory bound (a run of 10
million under 4 GiB, less on a machine with under 8 GiB); ``bench queue --requests 1e12`` asked
for 7 TiB."""
LOG_LINES = Bounds(1, 200_000_000)
"""Lines of a generated access log: on disk, not in memory (``validate --traffic`` reads it a
block at a time), so bounded by the disk it takes (``LOG_LINE_BYTES`` a line) and the time
(200 million lines: 26 GB, about 25 minutes of two cores)."""
LOG_LINE_BYTES = 150
"""Disk a generated combined line takes: ~130 bytes in the log and its 20-byte record."""
ROUNDS = Bounds(1, 1000)
"""Repeats, rounds and seeds: each holds its figures until the table is printed."""
SECONDS = Bounds(0.1, 3600)
"""A benchmark's phase or run length: what it sends is held, an hour of it at most."""


def bench_parser(name: str, description: str, **kwargs: object) -> Parser:
    """``run_bench.py bench NAME``'s parser."""
    return Parser(prog=f"run_bench.py bench {name}", description=description, **kwargs)  # type: ignore[arg-type]


def check_log_disk(parser: Parser, lines: int) -> None:
    """A generated log of ``lines`` fits the temporary directory's free disk, or one line and exit 2."""
    where = tempfile.gettempdir()
    need, free = lines * LOG_LINE_BYTES, shutil.disk_usage(where).free
    if need > free:
        parser.error(f"--lines {lines:,}: the log and its records take about {need / 2**30:,.1f} GiB of disk in {where}, "
                     f"{free / 2**30:,.1f} GiB are free (TMPDIR says where)")
