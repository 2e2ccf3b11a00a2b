"""What the load generator says while a run is on, for the live view: the plan's offered rate
and Locust's own running figures (its master writes ``stats_stats_history.csv`` every second:
requests/s now, the totals, and the percentiles of the last seconds' answers, measured from the
send), with the workers' late sends so far (``stats_late_sends.txt``, from their stats reports).
Read from the file's tail, so a long run's history costs the same as a short one's.

These are a display's figures, not the run's: the analysis computes every measure exactly from
the client log once the run is over (P99 from the intended send time, no coordinated omission)."""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

import numpy as np

from contract.schema import LIVE_LATE_SUFFIX

LOCUST_HISTORY = "stats_stats_history.csv"
"""Where Locust's master (``--csv <locust>/stats``) writes its running figures, a row a second."""
LOCUST_LATE = f"stats{LIVE_LATE_SUFFIX}"
"""Beside the history: the workers' late sends so far (scenarios/locustfile.py writes it)."""
TAIL_BYTES = 8192
"""The last few rows of the history: one per second for ``Aggregated``, one per name with full history."""


def locust_now(history: Path) -> dict[str, float] | None:
    """The last ``Aggregated`` row of Locust's stats history: achieved_rps, failures, requests,
    p50_ms and p99_ms (None where Locust has no answer yet); None before the first row."""
    try:
        with history.open("rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - TAIL_BYTES))
            tail = f.read().decode("utf-8", errors="replace").splitlines()
            f.seek(0)
            header = f.readline().decode("utf-8", errors="replace").strip()
    except OSError:
        return None
    rows = [r for r in csv.DictReader([header, *tail[1:]]) if r.get("Name") == "Aggregated"]
    if not rows:
        return None
    row = rows[-1]
    return {"achieved_rps": _number(row.get("Requests/s")), "requests": _number(row.get("Total Request Count")),
            "failures": _number(row.get("Total Failure Count")), "p50_ms": _number(row.get("50%")),
            "p99_ms": _number(row.get("99%"))}


def _number(text: str | None) -> float | None:
    try:
        value = float(text or "")
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def offered_rps(t: np.ndarray, elapsed_s: float) -> float:
    """Requests the plan offers in the second before ``elapsed_s`` (model time, ``t`` sorted)."""
    return float(np.searchsorted(t, elapsed_s, side="right") - np.searchsorted(t, elapsed_s - 1.0, side="right"))


def late_now(history: Path) -> dict[str, float]:
    """``late_groups``: the late sends the Locust master (or lone runner) last wrote beside its
    history (``LIVE_LATE_SUFFIX``); nothing before it wrote any."""
    try:
        return {"late_groups": float(history.with_name(LOCUST_LATE).read_text())}
    except (OSError, ValueError):
        return {}


def load_figures(t: np.ndarray, start_at: float, end_at: float, now: float, history: Path) -> dict[str, Any]:
    """The live view's figures at ``now`` (epoch seconds): elapsed and remaining seconds of the
    plan, the offered rate, and Locust's figures (with the late sends) when it has some."""
    elapsed = now - start_at
    locust = locust_now(history)
    return {"elapsed_s": elapsed, "remaining_s": max(0.0, end_at - now),
            "offered_rps": offered_rps(t, elapsed) if elapsed > 0 else 0.0,
            **({**locust, **late_now(history)} if locust else {})}
