"""Who a key policy stops and whom it hurts: an attacker forging the leftmost X-Forwarded-For,
one rotating addresses inside one IPv6 /64, and legitimate users, some behind one NAT address.

Every request reaches the target through one proxy (the peer address, 127.0.0.1 live) that
appends the address it saw to X-Forwarded-For; the forger writes a fresh fake address in front
of it. ``key_policy`` picks what the target trusts: its ``keys`` config (``target_config``), live
and in virtual time alike, where the harness derives each request's key from its headers with the
target's own code (the model imports nothing of the target):

- ``ip_only``: the peer address: everyone is the proxy, so the attackers starve everybody;
- ``leftmost_xff``: the first X-Forwarded-For entry: the forger gets a new key per request;
- ``trusted_proxy``: the entry the one trusted proxy wrote, per address: the forger is held,
  the IPv6 rotator is not, the NAT's users share one quota;
- ``ipv6_64``: as trusted_proxy with IPv6 aggregated by /64: the rotator is held too;
- ``api_key``: as ipv6_64, and legitimate users send their own API key: the NAT stops hurting.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from contract.routes import ITEMS

from .addresses import SHARED
from .base import (
    ABUSIVE,
    LEGIT,
    Arrivals,
    Count,
    ModelParams,
    Multiple,
    Request,
    ScenarioError,
    Span,
    TrafficModel,
    poisson_times,
)

ROUTE = ITEMS.model_name
NAT_ADDRESS = "198.51.100.7"
ATTACKER_V4 = "192.0.2.66"
ATTACKER_V6_NET = "2001:db8:66:"
"""Rotator i draws every address inside 2001:db8:66:i::/64."""

KeyPolicyName = Literal["ip_only", "leftmost_xff", "trusted_proxy", "ipv6_64", "api_key"]
KEY_POLICIES: dict[KeyPolicyName, tuple[int, int]] = {
    "ip_only": (0, 128),
    "leftmost_xff": (16, 128),
    "trusted_proxy": (1, 128),
    "ipv6_64": (1, 64),
    "api_key": (1, 64),
}
"""Key policy -> (trusted proxies, IPv6 prefix). 16 trusted hops reads the leftmost entry of
any list shorter than that: the classic misconfiguration."""


@dataclass(frozen=True)
class Params(ModelParams):
    key_policy: KeyPolicyName = "trusted_proxy"
    users: Count = 5
    """Legitimate users with an address of their own."""
    nat_users: Count = 5
    """Legitimate users behind one NAT address."""
    user_load: Multiple = 0.4
    """Each legitimate user's rate as a fraction of L/W."""
    attack_factor: Multiple = 5.0
    """Each attacker's rate as a multiple of L/W."""
    forgers: Count = 1
    rotators: Count = 1
    duration_s: Span | None = None
    """Defaults to 5 windows."""

    def check(self) -> None:
        if self.users + self.nat_users + self.forgers + self.rotators == 0:
            raise ScenarioError("users: at least one client (users, nat_users, forgers or rotators) is needed")


class KeyEvasion(TrafficModel):
    name = "key_evasion"
    summary = "forged leftmost XFF, IPv6 rotation in one /64 and users behind one NAT, against a key policy"
    shared_address = SHARED
    """Every client is behind the one proxy: the peer address the target sees is the proxy's."""

    p: Params

    def __init__(self, limit: float, window_s: float, seed: int, params: Params) -> None:
        super().__init__(limit, window_s, seed, params)
        self.trusted, self.ipv6_prefix = KEY_POLICIES[params.key_policy]

    def expected_requests(self) -> float:
        p = self.p
        rate = self.limit / self.window_s * (p.duration_s or 5 * self.window_s)
        return (p.users + p.nat_users) * p.user_load * rate + (p.forgers + p.rotators) * p.attack_factor * rate

    def generate(self) -> Arrivals:
        p = self.p
        rng = np.random.default_rng(self.seed)
        duration = p.duration_s or 5 * self.window_s
        rate = self.limit / self.window_s
        keyed = p.key_policy == "api_key"
        requests: list[Request] = []

        def add(client: str, klass: str, times: np.ndarray, forwarded: list[str]) -> None:
            for t, xff in zip(times.tolist(), forwarded):
                headers = {"x-forwarded-for": xff}
                if keyed and klass == LEGIT:
                    headers["x-api-key"] = f"key-{client}"
                # the key is the target's business: derived from the headers under target_config()
                requests.append(Request(t, client, klass, "", ROUTE, 1.0, 1, headers))

        for i in range(p.users):
            t = poisson_times(rng, p.user_load * rate, 0.0, duration)
            add(f"user-{i}", LEGIT, t, [f"203.0.113.{i % 250 + 1}"] * len(t))
        for i in range(p.nat_users):
            t = poisson_times(rng, p.user_load * rate, 0.0, duration)
            add(f"nat-user-{i}", LEGIT, t, [NAT_ADDRESS] * len(t))
        for i in range(p.forgers):
            t = poisson_times(rng, p.attack_factor * rate, 0.0, duration)
            fake = rng.integers(1, 255, (len(t), 4)).tolist()
            add(f"forger-{i}", ABUSIVE, t, [f"{'.'.join(map(str, f))}, {ATTACKER_V4}" for f in fake])
        for i in range(p.rotators):
            t = poisson_times(rng, p.attack_factor * rate, 0.0, duration)
            hosts = rng.integers(0, 1 << 16, (len(t), 4)).tolist()
            add(f"rotator-{i}", ABUSIVE, t, [f"{ATTACKER_V6_NET}{i:x}:{':'.join(f'{h:x}' for h in hs)}" for hs in hosts])
        return Arrivals.from_requests(requests)

    def target_config(self) -> dict[str, Any]:
        return {"keys": {"trusted_proxies": self.trusted, "ipv6_prefix": self.ipv6_prefix}}
