"""Figures that size memory, held against this machine before anything is allocated.

A figure (a trace's span in seconds, requests in a run) costs a known number of bytes each; its
bound is the smaller of a fixed ceiling (what the suite is measured to handle) and the share of
this machine's memory that the figure may take. Past it: one line naming the figure, the bound and
where the bound comes from, raised as the caller's bad-input error (exit 2)."""

from __future__ import annotations

import os

from .errors import BadInput

MEMORY_SHARE = 0.5
"""The share of the machine's memory one figure may claim: the rest is the process, its workers
and the system's."""


def machine_bytes() -> int:
    """This machine's physical memory (POSIX sysconf: the contract stands on the standard library)."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def bound_of(ceiling: float, bytes_each: float) -> int:
    """The largest figure that fits: the ceiling, or what ``MEMORY_SHARE`` of memory holds."""
    return int(min(ceiling, MEMORY_SHARE * machine_bytes() / bytes_each))


def check_fits(what: str, figure: float, ceiling: float, bytes_each: float, error: type[BadInput] = BadInput,
               advice: str = "") -> None:
    """Refuse ``figure`` past its bound, naming both (``what``: how the message calls it)."""
    bound = bound_of(ceiling, bytes_each)
    if not figure <= bound:  # NaN too
        source = "the suite's ceiling" if bound >= ceiling else \
            f"{MEMORY_SHARE:.0%} of this machine's {machine_bytes() / 2**30:.1f} GiB at {bytes_each:,.0f} bytes each"
        raise error(f"{what} {figure:,.0f} is beyond the bound of {bound:,} ({source}){'; ' + advice if advice else ''}")
