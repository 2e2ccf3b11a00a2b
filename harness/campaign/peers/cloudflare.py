"""The Cloudflare rate limiting rules peer, modelled approximately: a counter of
``requests_per_period`` over ``period`` per value of the rule's characteristics in each data center
(``cf.colo.id`` is mandatory: "counters are not shared across data centers", so the fleet is the
colos a client's traffic reaches), and once tripped a block for ``mitigation_timeout`` whatever the
client sends ("the rule action for the configured duration ... regardless of the request rate";
0: only the requests over the rate, Enterprise's throttle). Rules read by cloudflare_rules.py.

Approximate: Cloudflare's current docs do not say whether the counter is fixed or sliding (a 2017
blog described a weighted two-window approximation) and detection may lag by seconds (an IPv6
client is counted per /64: cloudflare-docs#8532); the model is a sliding log (``sliding_log``, ``fixed_block`` for the block).
"""

from __future__ import annotations

import re

from targets.algorithms import Policy

from .base import ConfigFinding, ConfigLimit, PeerConfig, PeerError
from .cloudflare_rules import Rule, read_rules
from .modelled import ModelledPeer

LINTS = ("cloudflare_per_colo", "cloudflare_timeout", "cloudflare_key")
WHY = ("Cloudflare documents a counter over the period per data center, not whether it is fixed or sliding, and its "
       "detection may lag by seconds; modelled as a sliding log")
CLIENT_IP = ("ip.src", "ip.src.ipv6")


class Cloudflare(ModelledPeer):
    name = system = "cloudflare"
    summary = ("Cloudflare rate limiting rules (a counter per period per characteristics value per data center, a "
               "block for the mitigation timeout); approximate, not runnable here")
    algorithm = "sliding_log"
    source = "Cloudflare's documentation (developers.cloudflare.com/waf/rate-limiting-rules/)"
    why_not_run = "a cloud service"

    def recognises(self, text: str) -> bool:
        return re.search(r"\"?requests_per_period\"?\s*[:=]", text) is not None

    def read_config(self, text: str, source: str = "config") -> PeerConfig:
        limits, findings, notes = [], [], []
        for rule in read_rules(text, source):
            limits.append(_limit(rule))
            findings += _findings(rule)
            notes += _notes(rule)
        if not limits:
            raise PeerError(f"{source}: no rule with a ratelimit: nothing in the file limits requests")
        return PeerConfig(limits, retry_after=False, cache_control=None, notes=notes, findings=findings, lints=LINTS,
                          ipv6_prefix=64, approximate=WHY)

    def policy_from_config(self, text: str) -> Policy:
        return self.read_config(text).limits[0].policy


def _whole(rule: Rule, name: str, low: int) -> int:
    value = rule.fields.get(name, 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise PeerError(f"{rule.where.get(name, rule.where[''])}: {name} {value!r}: a whole number of at least {low}")
    return value


def _key(rule: Rule) -> str:
    chars = rule.fields.get("characteristics") or []
    if "cf.colo.id" not in chars:
        raise PeerError(f"{rule.where.get('characteristics', rule.where[''])}: characteristics {chars!r}: Cloudflare "
                        "requires cf.colo.id (counters are per data center)")
    if any(c in CLIENT_IP for c in chars):
        return "ip"
    return "api_key" if len(chars) > 1 else "global"


def _limit(rule: Rule) -> ConfigLimit:
    policy = Policy(_whole(rule, "requests_per_period", 1), float(_whole(rule, "period", 1)))
    timeout, key = _whole(rule, "mitigation_timeout", 0), _key(rule)
    scope = "instance" if key == "global" else "client"
    if timeout == 0:
        return ConfigLimit(rule.name, policy, key, scope=scope)
    return ConfigLimit(rule.name, policy, key, scope=scope, algorithm="fixed_block", params={"block_s": float(timeout)})


def _findings(rule: Rule) -> list[ConfigFinding]:
    """Cloudflare's pitfalls of one rule: a site-wide count per colo, the timeout read as the period, the key."""
    out, key = [], _key(rule)
    n, period, timeout = rule.fields["requests_per_period"], rule.fields["period"], rule.fields.get("mitigation_timeout", 0)
    if key == "global":
        out.append(ConfigFinding("cloudflare_per_colo", rule.where["characteristics"],
                                 f"{rule.name}: one counter for every client, but per data center: the site-wide {n} per "
                                 f"{period} s is {n} at each colo the traffic reaches (--replicas COLOS: the fleet's figure)",
                                 "a per-client characteristic (ip.src), or the site-wide limit divided by the colos"))
    if timeout == 0:
        out.append(ConfigFinding("cloudflare_timeout", rule.where.get("mitigation_timeout", rule.where[""]),
                                 f"{rule.name}: mitigation_timeout 0: no block, only the requests over the rate are "
                                 "refused and a client keeps its full rate (the throttle behaviour, an Enterprise "
                                 "option)", f"mitigation_timeout: {period} (one period)"))
    elif timeout > period:
        out.append(ConfigFinding("cloudflare_timeout", rule.where["mitigation_timeout"],
                                 f"{rule.name}: a client over {n} per {period} s once is blocked {timeout} s, "
                                 f"{timeout / period:g}x the period, whatever it sends meanwhile (the mitigation timeout "
                                 "is not the period: cloudflare-docs#9657)", f"mitigation_timeout: {period}"))
    if key != "ip":
        out.append(ConfigFinding("cloudflare_key", rule.where["characteristics"],
                                 f"{rule.name}: characteristics without the client IP: every client without the other "
                                 "characteristics' value shares one counter per colo", "add ip.src to characteristics"))
    return out


def _notes(rule: Rule) -> list[str]:
    out = []
    if rule.action == "log":
        out.append(f"{rule.where['']}: {rule.name}: action log: Cloudflare refuses nothing; modelled as block")
    if rule.fields.get("counting_expression"):
        out.append(f"{rule.where['counting_expression']}: {rule.name}: counting_expression: Cloudflare counts only the "
                   "requests it matches; validate counts every request")
    if rule.fields.get("requests_to_origin"):
        out.append(f"{rule.where['requests_to_origin']}: {rule.name}: requests_to_origin: cache hits are not counted; "
                   "validate counts every request")
    return out
