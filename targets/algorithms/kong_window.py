"""Kong's ``rate-limiting`` plugin (open source), one period of it: the model of the ``kong`` peer,
not one of the suite's targets' algorithms (``PEER_MODELS``). Kong does not run here (no Kong or
OpenResty in a registry reachable here); this is a model of Kong/kong @22246ef2 (2026-07-01),
read from ``kong/plugins/rate-limiting/`` and ``kong/tools/timestamp.lua``:

- windows start on **UTC calendar** boundaries: the second, minute, hour, day, the 1st of the
  month, January 1st (``timestamp.lua:46-69``), from ``ngx.time()`` in whole seconds
  (``handler.lua:127``); a month is a calendar month (28 to 31 days), a year 365 or 366 days;
- for every configured period ``remaining = limit - usage`` and the request is refused when any
  ``remaining <= 0`` (``handler.lua:89-114``), **before** anything is counted (``:193-201``);
- an admitted request is counted in every period afterwards, by 1 (``:208-216``): refusals are
  never counted. Several periods are several limits of one key that all commit only when all
  admit (the suite's layered check in memory: ``targets/layers.py``).
The increment runs in a timer after the response starts (``ngx.timer.at(0, ...)``): concurrent
requests that read the same usage over-admit; the model decides requests one at a time.
``window_s`` names the period: 1, 60, 3600, 86400, 2592000 (a calendar month), 31536000 (a
calendar year).
"""

from __future__ import annotations

from datetime import UTC, datetime

from .base import US, Algorithm, Decision, new_decision
from .policy import PolicyError, WindowParams

PERIODS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "month": 2592000, "year": 31536000}
"""Each period's ``window_s`` (month and year: the calendar's, ``kong/plugins/rate-limiting/expiration.lua``'s lengths)."""
State = tuple[int, float]  # (window start in Unix seconds, admitted requests in it)


class Params(WindowParams):
    def __post_init__(self) -> None:
        super().__post_init__()
        if self.window_s not in PERIODS.values() or self.limit != int(self.limit):
            raise PolicyError(f"kong_window: {self.limit:g} per {self.window_s:g} s; Kong's rate-limiting counts "
                              f"whole requests per {', '.join(PERIODS)}")


def from_policy(policy) -> Params:
    return Params(policy.limit, policy.window_s)


def window(second: int, window_s: float) -> tuple[int, int]:
    """(start, end) in Unix seconds of the UTC calendar period holding ``second``."""
    if window_s < PERIODS["month"]:
        size = int(window_s)
        return second // size * size, second // size * size + size
    t = datetime.fromtimestamp(second, UTC)
    if window_s == PERIODS["month"]:
        start = t.replace(day=1, hour=0, minute=0, second=0)
        end = start.replace(year=start.year + start.month // 12, month=start.month % 12 + 1)
    else:
        start = t.replace(month=1, day=1, hour=0, minute=0, second=0)
        end = start.replace(year=start.year + 1)
    return int(start.timestamp()), int(end.timestamp())


def decide(state: State | None, now: float, cost: float, p: Params) -> tuple[Decision, State]:
    second = int((now * US + 0.5) // US)  # ngx.time(): whole seconds
    start, end = window(second, p.window_s)
    usage = state[1] if state is not None and state[0] == start else 0.0
    reset = float(end - now)
    if p.limit - usage > 0:  # handler.lua:100, 108: refused when remaining <= 0
        return new_decision(Decision, (True, p.limit - usage - cost, 0.0, reset, 0.0)), (start, usage + cost)
    return new_decision(Decision, (False, 0.0, reset, reset, 0.0)), (start, usage)


ALGORITHM = Algorithm(
    name="kong_window",
    summary="Kong rate-limiting: a UTC-calendar window per period, counted after the decision (refusals never)",
    params_type=Params,
    params_from_policy=from_policy,
    decide=decide,
    state_ttl=lambda p: {PERIODS["month"]: 31 * 86400, PERIODS["year"]: 366 * 86400}.get(p.window_s, p.window_s),
    max_cost=lambda p: p.limit,
)
