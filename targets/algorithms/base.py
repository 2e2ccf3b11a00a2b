"""What every algorithm core returns and how it is described.

An algorithm is a pure transition ``decide(state, now, cost, params) -> (Decision, state)``:
no clock, no I/O, no mutation of the state it was given. ``state`` is ``None`` for a key that
was never seen (or whose state expired), so a new key starts fresh: full bucket, empty window.
A rejected request consumes nothing; the returned state may only differ from the given one by
bookkeeping that does not change any later decision (e.g. expired entries dropped).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

INF = math.inf

US = 1e6
"""Microseconds per second. Every time-based algorithm works on whole microseconds: ``now`` is
rounded to the nearest µs on entry (``(now * 1e6 + 0.5) // 1.0``: a float floor, without
the call ``math.floor`` costs on the hot path) and durations are kept in µs.
Why µs: a decimal timestamp (a trace file, a millisecond or microsecond clock) is recovered
exactly, so a client paced exactly at the rate is on time, not 1e-17 s early; Redis's TIME
answers in µs; and Lua 5.1 (Redis's scripts) has only doubles, exact for integers up to
2^53 µs = 285 years since the epoch, where nanoseconds would stop being exact after 104 days.
The memory store and the Redis scripts do the same double operations in the same order, so
they stay decision for decision identical."""


def micros(seconds: float) -> float:
    """A duration in µs: the whole number of µs it is within float rounding of (0.3 s gives
    300000, not 299999.99999999994, which would put a window edge 1e-10 µs early), else the
    product itself (1/3 s). Computed once per params, in Python; the Redis scripts receive the
    results (``derived_names``), so both stores decide on the very same constants."""
    us = seconds * US
    whole = math.floor(us + 0.5)
    return float(whole) if abs(us - whole) <= 1e-12 * max(1.0, abs(us)) else us


def decided_at(now: Any) -> Any:
    """``now`` (seconds: a float or a numpy array) rounded to the whole µs the algorithms decide
    at, still in seconds: what a decision log records, so that its over-admission is measured on
    the very times that were decided (two requests W - 0.3 µs apart are W apart to them)."""
    return (now * 1e6 + 0.5) // 1.0 / 1e6


def whole_ms(now: float) -> int:
    """``now`` on a whole-millisecond clock, truncated from the whole µs the suite decides at:
    the clock of the peers' models (HAProxy's ticks, the ms Redis's scripts in ``limits`` use)."""
    return int((now * 1e6 + 0.5) // 1000)


def derive(params: Any, **values: float) -> None:
    """Set a params object's µs constants once, in its ``__post_init__``: they are attributes
    (declared ``ClassVar``), not dataclass fields, so ``--param`` and run.json see only the
    fields; the Redis codec passes them to the scripts after the fields (``derived_names``)."""
    for name, value in values.items():
        object.__setattr__(params, name, value)


def derived_names(params_type: type) -> tuple[str, ...]:
    """The constants a params class derives in ``__post_init__``: its ``ClassVar`` annotations, in order."""
    return tuple(name for name, kind in vars(params_type).get("__annotations__", {}).items()
                 if str(kind).startswith(("ClassVar", "typing.ClassVar")))


new_decision = tuple.__new__
"""``new_decision(Decision, (allowed, remaining, retry_after_s, reset_s, delay_s))``: builds a
Decision without the Python-level NamedTuple constructor, which costs more than a whole
fixed-window decision on the hot path."""


class Decision(NamedTuple):
    """The verdict on one request, with everything a 429 or the RateLimit headers need."""

    allowed: bool
    remaining: float
    """Cost units still admissible right now after this decision (never negative)."""
    retry_after_s: float
    """0 when allowed; else seconds until a request of the same cost would be admitted
    (``inf`` when the cost can never be admitted)."""
    reset_s: float
    """Seconds until the quota is fully restored if no more requests arrive."""
    delay_s: float = 0.0
    """Queueing algorithms only: how long to hold an admitted request before serving it."""


@dataclass(frozen=True)
class Algorithm:
    """One algorithm: its pure transition plus what the stores and the CLI need to know."""

    name: str
    summary: str
    params_type: type
    params_from_policy: Callable[[Any], Any]
    """Maps the common policy (L per W, burst) onto this algorithm's own parameters."""
    decide: Callable[[Any, float, float, Any], tuple[Decision, Any]]
    state_ttl: Callable[[Any], float]
    """Seconds after its last touch when a key's state is certainly equivalent to a fresh one;
    stores use it as the idle TTL, so expiring a key never changes a decision."""
    max_cost: Callable[[Any], float]
    """The largest cost a single request can ever be admitted with."""
    limits: bool = True
    """False for the baseline that admits everything (``none``): no state, no store round trip,
    nothing for an attack to find."""
    scope: str = "client"
    """Whom its default limit counts: ``client`` (a state per client key) or ``global`` (one state
    for the downstream as a whole: a concurrency limit that guards the service)."""
    release: Callable[[Any, float, float, Any], Any] | None = None
    """Concurrency-style algorithms: give back ``cost`` slots when a request finishes."""
    observe: Callable[..., Any] | None = None
    """Latency-driven algorithms: ``observe(state, now, rtt_s, params, failed=False) -> state``
    (``failed``: the response was a 503) folds one
    completed request's latency into the state (the live target calls it, and the simulator
    with its downstream model's latencies: ``harness/sim/simulator.py``)."""
    current_limit: Callable[[Any, Any], float] | None = None
    """Algorithms whose limit moves (latency-driven): ``current_limit(state, params)``, the limit
    a key's state stands at (None: a fresh key), shown in headers and metrics."""
    observe_reading: Callable[[Any, float, Any, Any], Any] | None = None
    """Load-driven algorithms: ``observe_reading(state, now, reading, params) -> state`` folds one
    CPU/load reading (``adaptive_rules.Reading``) into the state, pushed in from outside: the
    live target samples its process off the hot path; the simulator calls it with its
    model's CPU (``harness/sim/simulator.py``)."""
    reads: Callable[[Any], bool] | None = None
    """Load-driven algorithms: ``reads(params)``, whether these params need the readings at all
    (the live target samples its CPU only then; None: never)."""
    window_bound: Callable[[Any], tuple[float, float]] | None = None
    """Algorithms exact by construction: ``window_bound(params)`` is (L, W) such that one state
    never admits more than cost L in any half-open window of W seconds (the sliding log), so a
    worst case over L per W needs no replay to be known; None: only a replay says."""

    def needs_readings(self, params: Any) -> bool:
        """Whether ``params`` make this algorithm read CPU/load (its ``reads`` hook)."""
        return self.observe_reading is not None and self.reads is not None and self.reads(params)
