"""How long one downstream call takes in each health phase: pure, so the live downstream
(``downstream.py``) and the virtual-time model honour the same ``DownstreamConfig`` schedule.

- ``healthy`` / ``recovered``: the lognormal service time as drawn;
- ``degraded``: times the phase's ``factor`` (a step to a slower new normal is a ``degraded``
  phase that is never followed by a recovery);
- ``stuck``: every call takes exactly ``latency_ms`` (a dependency hanging until a timeout);
- ``paused``: stop-the-world pauses of ``pause_ms`` every ``period_s`` from the phase's start
  (GC-like): a call waits out a pause it arrives in, and every pause that begins before it is
  done adds its length;
``outage`` is no duration: the caller fails the call (503) before drawing one (``downstream.py``);
a call that started before an outage began finishes with the time it drew.
"""

from __future__ import annotations

import math


def paused_duration(offset_s: float, service_s: float, period_s: float, pause_s: float) -> float:
    """A call starting ``offset_s`` into a ``paused`` phase, needing ``service_s`` of work."""
    t = offset_s
    k = math.floor(t / period_s)
    if t < k * period_s + pause_s:
        t = k * period_s + pause_s
    remaining = service_s
    while True:
        next_pause = (math.floor(t / period_s) + 1) * period_s
        if t + remaining <= next_pause:
            return t + remaining - offset_s
        remaining -= next_pause - t
        t = next_pause + pause_s


def call_duration(health: str, service_s: float, offset_s: float, factor: float = 1.0,
                  latency_ms: float = 0.0, period_s: float = 1.0, pause_ms: float = 0.0) -> float:
    """The duration of one call that drew ``service_s`` and starts ``offset_s`` into its phase."""
    if health == "degraded":
        return service_s * factor
    if health == "stuck":
        return latency_ms / 1000.0
    if health == "paused":
        return paused_duration(offset_s, service_s, period_s, pause_ms / 1000.0)
    return service_s
