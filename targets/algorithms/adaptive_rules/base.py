"""What an adaptive rule is: four pure functions over ``(limit, in_flight, memo)``.

The ``adaptive`` algorithm keeps the admission mechanics (admit while in flight < limit,
give slots back) and hands the judgement to a rule, so every rule runs on the live target and
in the simulator through the same three calls (``decide``, ``observe``, ``release``), plus
``observe_reading`` for the rules that read CPU or load. ``memo`` is the rule's own immutable
bookkeeping (a tuple); ``p`` is the algorithm's ``Params``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..policy import PolicyError

Memo = Any
Params = Any


class Reading(NamedTuple):
    """One sample of the protected process's health, pushed in from outside the pure core.

    Live: the target samples its own process off the hot path (psutil) and the host's load
    average. Virtual time: the simulator feeds its model's CPU through it
    (harness/sim/simulator.py). The core never reads a clock or the OS."""

    cpu: float
    """CPU used by the target process, as a fraction of one core (0.9 = 90%)."""
    load: float = 0.0
    """The host's 1-minute load average (what Sentinel's system rule reads)."""


def admit_below_limit(limit: float, in_flight: float, memo: Memo, now: float, cost: float,
                      p: Params) -> tuple[bool, float, Memo]:
    """The Netflix/Envoy admission: room is the integer part of the limit minus what is in flight."""
    return cost <= math.floor(limit) - in_flight, limit, memo


def keep(limit: float, memo: Memo, *_: Any) -> tuple[float, Memo]:
    """A rule that ignores readings (or releases) leaves its state as it is."""
    return limit, memo


@dataclass(frozen=True)
class Rule:
    name: str
    """The ``rule`` parameter's value (each module's docstring cites its source)."""
    fresh: Callable[[Params], tuple[float, Memo]]
    """The starting limit and memo."""
    sample: Callable[[float, float, Memo, float, float, Params], tuple[float, Memo]]
    """``sample(limit, in_flight, memo, now, rtt_s, p)``: one completed request's latency
    (``in_flight`` still counts it)."""
    check: Callable[[Params], None]
    """Refuse parameters outside the rule's domain (one line naming the rule and field)."""
    admit: Callable[[float, float, Memo, float, float, Params], tuple[bool, float, Memo]] = admit_below_limit
    """``admit(limit, in_flight, memo, now, cost, p) -> (allowed, limit, memo)``: may move
    the limit on the clock (timers) or on load readings."""
    read: Callable[[float, Memo, float, Reading, Params], tuple[float, Memo]] = keep
    """``read(limit, memo, now, reading, p)``: fold one CPU/load reading in."""
    released: Callable[[float, Memo, float, Params], tuple[float, Memo]] = keep
    """``released(limit, memo, in_flight_after, p)``: a request left (go-zero's average flying)."""
    reads: bool = False
    """The rule needs readings: the live target samples CPU for it."""
    samples_failures: bool = True
    """A failed response (503) is still a latency sample. go-zero's shedding handler calls
    ``promise.Fail()`` on a 503: no pass, no RT (the slot is still given back)."""


def refuse(rule: str, field: str, value: Any, need: str) -> PolicyError:
    return PolicyError(f"adaptive rule {rule}: {field}={value!r} out of its domain; need {need}")


def require_at_least(rule: str, p: Params, name: str, low: float, *, strict: bool = False) -> None:
    """Refuse ``p.<name>`` unless finite and >= ``low`` (> ``low`` when ``strict``)."""
    value = getattr(p, name)
    if not (math.isfinite(value) and (value > low if strict else value >= low)):
        raise refuse(rule, name, value, f"{name} {'>' if strict else '>='} {low:g}")


def require_cpu_threshold(rule: str, p: Params) -> None:
    """The rules that read CPU: a threshold strictly between idle and a full core."""
    if not 0 < p.cpu_threshold < 1:
        raise refuse(rule, "cpu_threshold", p.cpu_threshold, "0 < cpu_threshold < 1")


def clamp(value: float, low: float, high: float) -> float:
    return min(high, max(low, value))


def seeded_uniform(seed: int, n: int) -> float:
    """The n-th uniform number in [0, 1) of a seed: jitter a run can replay (random.Random is
    the standard library's Mersenne Twister; one small object per draw, drawn rarely)."""
    return random.Random(seed * 1_000_003 + n).random()


def log10_root(limit: float) -> int:
    """Netflix's ``Log10RootIntFunction``: max(1, floor(log10(limit)))."""
    n = int(limit)
    return max(1, int(math.log10(n))) if n >= 1 else 1


def bucket_id(now: float, bucket_s: float) -> int:
    return int(now // bucket_s)


def add_to_bucket(buckets: tuple, now: float, bucket_s: float, keep_n: int,
                  merge: Callable[[tuple | None], tuple]) -> tuple:
    """A rolling window as a tuple of ``(bucket id, *values)``, newest last: ``merge`` builds the
    bucket's new values from its old ones (None for a new bucket); buckets older than ``keep_n``
    are dropped. Pure and short (a handful of buckets), so copying it per sample is cheap."""
    current = bucket_id(now, bucket_s)
    if buckets and buckets[-1][0] == current:
        return (*buckets[:-1], (current, *merge(buckets[-1][1:])))
    kept = tuple(b for b in buckets if b[0] > current - keep_n)
    return (*kept, (current, *merge(None)))


def buckets_within(buckets: tuple, now: float, bucket_s: float, first_back: int, last_back: int) -> tuple:
    """The buckets whose id is between ``current - first_back`` and ``current - last_back``."""
    current = bucket_id(now, bucket_s)
    return tuple(b for b in buckets if current - first_back <= b[0] <= current - last_back)
