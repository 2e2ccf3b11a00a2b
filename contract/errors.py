"""The one base class of bad input: a file, flag or parameter that cannot be used.

Every error the user can fix by changing what they passed derives from ``BadInput`` (a
``ValueError``, as each was before); both command lines catch this one class, print its message on
one line and exit 2. Errors of the machine (a target that does not start, a redis-server that
cannot) are not bad input and stay apart. The ground floor, so that every room may derive from it.
"""

from __future__ import annotations


class BadInput(ValueError):
    """Bad input: the message names what is wrong (and, where there are few, the valid choices)."""
