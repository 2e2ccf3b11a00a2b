"""Logged times to epoch seconds, column at a time (arrow compute: C speed, no per-line Python).
A value that does not parse becomes NaN: its line is counted as unreadable."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

TIME_VARIABLES = ("msec", "time_iso8601", "time_local")
"""The NGINX variables that date a request; ``$msec`` is the only one finer than a second."""
WHOLE_SECOND = ("time_local", "time_iso8601", "cloudfront")
EARLIEST = 788_918_400.0
"""1995-01-01 UTC: a request logged before it is a clock that was never set (1970), not a request."""
LATEST = 4_102_444_800.0
"""2100-01-01 UTC: a request logged after it (9999) is a corrupt line."""


def _epoch(stamps: pa.Array) -> np.ndarray:
    """Timestamps (any unit, nulls allowed) -> float seconds, NaN for null."""
    micros = pc.cast(pc.cast(stamps, pa.timestamp("us", "UTC")), pa.int64())
    return pc.fill_null(pc.cast(micros, pa.float64(), safe=False), np.nan).to_numpy() / 1e6  # 9999: past 2^53 µs


def parse_times(variable: str, values: pa.Array) -> np.ndarray:
    """``variable`` is the NGINX name or an AWS one (``alb``: ISO 8601 with microseconds and Z,
    ``cloudfront``: ``date time`` in UTC, ``epoch``: JSON seconds or ISO 8601 strings)."""
    values = pc.cast(values, pa.string())
    if variable == "msec":
        return _floats(values)
    if variable == "time_local":
        return _epoch(pc.strptime(values, format="%d/%b/%Y:%H:%M:%S %z", unit="s", error_is_null=True))
    if variable == "time_iso8601":
        return _epoch(pc.strptime(values, format="%Y-%m-%dT%H:%M:%S%z", unit="s", error_is_null=True))
    if variable == "cloudfront":
        return _epoch(pc.strptime(values, format="%Y-%m-%d %H:%M:%S", unit="s", error_is_null=True))
    return _iso(values)


def _floats(values: pa.Array) -> np.ndarray:
    ok = pc.fill_null(pc.match_substring_regex(values, r"^\d+(\.\d*)?$"), False)
    out = np.full(len(values), np.nan)
    mask = ok.to_numpy(zero_copy_only=False)
    out[mask] = pc.cast(pc.filter(values, ok), pa.float64()).to_numpy()
    return out


def _iso(values: pa.Array) -> np.ndarray:
    """ISO 8601 with optional fraction and Z or offset (ALB, Envoy's start_time), or plain
    epoch seconds."""
    numeric = pc.fill_null(pc.match_substring_regex(values, r"^\d+(\.\d*)?$"), False)
    out = _floats(values)
    rest = pc.invert(numeric)
    if pc.any(rest).as_py():
        mask = rest.to_numpy(zero_copy_only=False)
        iso = pc.filter(values, rest)
        try:
            out[mask] = _epoch(pc.cast(iso, pa.timestamp("us", "UTC")))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # one bad value fails the block's cast
            out[mask] = np.array([_one_iso(s) for s in iso.to_pylist()], dtype=np.float64)
    return out


def _one_iso(text: str | None) -> float:
    """One ISO 8601 string (arrow's cast would raise on the first bad one for the whole block)."""
    if text is None:
        return np.nan
    try:
        stamp = pa.scalar(text).cast(pa.timestamp("us", "UTC"))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return np.nan
    return stamp.value / 1e6
