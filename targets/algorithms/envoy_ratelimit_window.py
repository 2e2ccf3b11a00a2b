"""envoyproxy/ratelimit's fixed window (the global rate-limit service behind Envoy's ``ratelimit``
filter): the model of the ``envoy-ratelimit`` peer, not one of the suite's targets' algorithms
(``PEER_MODELS``). The service does not run here (Go, no binary in a registry reachable here);
this is a model of envoyproxy/ratelimit @f2fb1577 (2026-07-05), read from its source:

- the counter's key ends in ``(now / divider) * divider`` with ``now`` in whole Unix seconds
  (``src/limiter/cache_key.go:81-82``, ``TimeSource.UnixNow``): windows aligned to the epoch, so
  up to 2L pass in two seconds around an edge;
- ``divider`` is SECOND 1, MINUTE 60, HOUR 3600, DAY 86400, WEEK 604800, MONTH 2592000 (30 days)
  and YEAR 31536000 (365 days) (``src/utils/utilities.go:20-39``): not calendar months or years;
- every request runs ``INCRBY key hits_addend`` before the decision (``src/redis/fixed_cache_impl.go:35-38,
  161-187``) and is over the limit iff the count after the increase exceeds ``requests_per_unit``
  (``src/limiter/base_limiter.go:99-101``): **refused requests are counted**. With
  ``STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=true`` a key that goes over is still incremented
  (``fixed_cache_impl.go:44-72, 143-157``: "only increment the cache key if the key is near
  limit"); the flag spares only the *other* descriptors of that request, so one descriptor's
  decisions are the same either way.
"""

from __future__ import annotations

from .base import INF, US, Algorithm, Decision, new_decision
from .policy import PolicyError, WindowParams

UNITS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 604800, "month": 2592000, "year": 31536000}
"""src/utils/utilities.go:20-39."""
State = tuple[int, float]  # (window start in Unix seconds, hits counted in it, refused ones too)


class Params(WindowParams):
    def __post_init__(self) -> None:
        super().__post_init__()
        if self.window_s not in UNITS.values() or self.limit != int(self.limit):
            raise PolicyError(f"envoy_ratelimit_window: {self.limit:g} per {self.window_s:g} s; envoyproxy/ratelimit "
                              f"counts whole requests_per_unit per unit ({', '.join(UNITS)})")


def from_policy(policy) -> Params:
    return Params(policy.limit, policy.window_s)


def decide(state: State | None, now: float, cost: float, p: Params) -> tuple[Decision, State]:
    unit = int(p.window_s)
    start = int((now * US + 0.5) // US) // unit * unit  # UnixNow(): whole seconds of the suite's whole µs
    count = (state[1] if state is not None and state[0] == start else 0.0) + cost  # INCRBY, admitted or not
    reset = float(start + unit - now)
    if count <= p.limit:
        return new_decision(Decision, (True, p.limit - count, 0.0, reset, 0.0)), (start, count)
    return new_decision(Decision, (False, 0.0, reset if cost <= p.limit else INF, reset, 0.0)), (start, count)


ALGORITHM = Algorithm(
    name="envoy_ratelimit_window",
    summary="envoyproxy/ratelimit: epoch-aligned fixed window of whole seconds, refused requests counted",
    params_type=Params,
    params_from_policy=from_policy,
    decide=decide,
    state_ttl=lambda p: p.window_s,
    max_cost=lambda p: p.limit,
)
