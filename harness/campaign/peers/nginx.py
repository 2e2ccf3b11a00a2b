"""The NGINX ``limit_req`` peer, configured from the same policy vocabulary, and the suite's
algorithm that models it.

NGINX keeps, per key, an *excess* in thousandths of a request: a request finds
``excess = max(0, prev - rate * elapsed_ms / 1000 + 1000)`` and is refused when that exceeds
``burst * 1000`` (the refused request changes nothing). A fresh (or long idle) key therefore
admits ``burst + 1`` requests at once: NGINX's burst counts the requests *beyond* the first.
The policy's burst B (requests admissible at once) is NGINX ``burst=B-1``, and the model that
agrees with it request by request is our token bucket of capacity B refilled at NGINX's own rate.
NGINX stores the rate as integer thousandths of a request per second, so ``100r/m`` refills at
1.666 per second, not 1.6667: the model uses the rate NGINX keeps.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from targets.algorithms import Policy

from .base import Peer, PeerConfig, PeerError
from .nginx_config import read_nginx


@dataclass(frozen=True)
class NginxLimit:
    """A policy in NGINX's terms."""

    rate: str
    """``limit_req_zone``'s ``rate=`` (``10r/s``, ``100r/m``)."""
    burst: int
    """``limit_req``'s ``burst=``: the requests admitted at once beyond the first."""
    rate_per_s: float
    """The refill NGINX really applies (integer thousandths per second)."""

    @property
    def model_capacity(self) -> int:
        """The token bucket that agrees with NGINX: capacity burst + 1."""
        return self.burst + 1


def nginx_limit(policy: Policy) -> NginxLimit:
    """The policy as NGINX ``limit_req``: a whole number of requests per second or per minute and a
    whole burst of at least one; anything else is refused (NGINX would round it silently)."""
    per_s = Fraction(policy.limit).limit_denominator(10**6) / Fraction(policy.window_s).limit_denominator(10**6)
    if per_s.denominator == 1:
        rate, milli = f"{per_s.numerator}r/s", per_s.numerator * 1000
    elif (per_s * 60).denominator == 1:
        per_m = (per_s * 60).numerator
        rate, milli = f"{per_m}r/m", per_m * 1000 // 60
    else:
        raise PeerError(f"peer nginx: limit {policy.limit:g} per {policy.window_s:g} s is {float(per_s):.6g} requests/s; "
                        "NGINX limit_req takes a whole number of requests per second or per minute")
    burst = policy.effective_burst
    if burst != int(burst) or burst < 1:
        raise PeerError(f"peer nginx: burst {burst:g} is not a whole number of requests >= 1 (NGINX burst= counts requests)")
    if milli == 0:
        raise PeerError(f"peer nginx: {rate} is below NGINX's resolution of 1/1000 request per second")
    return NginxLimit(rate, int(burst) - 1, milli / 1000)


class Nginx(Peer):
    name = system = "nginx"
    summary = ("NGINX limit_req (nodelay, 429), keyed by the API-key header else the client address; "
               "modelled by token_bucket (simulate --algorithm nginx_limit_req)")
    binary = package = "nginx"
    runs_files = True

    def model(self, policy: Policy) -> tuple[str, Policy]:
        n = nginx_limit(policy)
        return "token_bucket", Policy(n.rate_per_s * policy.window_s, policy.window_s, n.model_capacity)

    def recognises(self, text: str) -> bool:
        return re.search(r"\blimit_req(_zone)?\b", text) is not None

    def read_config(self, text: str, source: str = "config") -> PeerConfig:
        config = read_nginx(text).config
        self.modelled(config.limits)
        return config

    def policy_from_config(self, text: str) -> Policy:
        """The first ``limit_req`` line's policy (``read_config`` has them all)."""
        return self.read_config(text).limits[0].policy


class NginxProblem(Nginx):
    name = "nginx-problem"
    summary = ("nginx, refusing with an RFC 9457 problem+json 429, a truthful Retry-After and Cache-Control: no-store "
               "(error_page 429 = @rb_429)")
    runs_files = False  # a file of yours runs as nginx: its own lines replace the variant's


class NginxRealIp(Nginx):
    name = "nginx-realip"
    summary = ("nginx keyed by the client address behind the trusted proxy 127.0.0.1 (real_ip from X-Forwarded-For, "
               "recursive): for key_evasion")
    runs_files = False
