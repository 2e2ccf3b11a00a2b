"""The AWS API Gateway peer, modelled approximately: a token bucket per throttling level (a stage's
or method's, an HTTP API route's, a usage plan's per API key; what a level leaves unset is the
account's default), layered so the smallest wins (the suite's layered check), read from a
CloudFormation or SAM template (cloudformation.py).

Approximate, in AWS's own words: "API Gateway throttles requests to your API using the token
bucket algorithm" and "throttles are applied on a best-effort basis and should be thought of as
targets rather than guaranteed request ceilings" (api-gateway-request-throttling.html). Nothing of
it runs here: the model is the documented bucket, not AWS's code.
"""

from __future__ import annotations

import re

from targets.algorithms import Policy

from .base import ConfigFinding, ConfigLimit, PeerConfig, PeerError
from .cloudformation import ACCOUNT_BURST, ACCOUNT_RATE, Template, read_template
from .modelled import ModelledPeer

LINTS = ("aws_burst_below_rate", "aws_usage_plan", "aws_scope")
WHY = ("AWS documents token-bucket targets applied on a best-effort basis, not exact behaviour "
       "(api-gateway-request-throttling.html)")


class AwsApiGateway(ModelledPeer):
    name = system = "aws-api-gateway"
    summary = ("AWS API Gateway throttling (stage, method, route, usage plan per API key, the account's default), "
               "a token bucket per level, the smallest wins; approximate (AWS's targets), not runnable here")
    algorithm = "token_bucket"
    source = "AWS's documentation (api-gateway-request-throttling.html)"
    why_not_run = "a cloud service"

    def recognises(self, text: str) -> bool:
        return re.search(r"AWS::(ApiGateway|ApiGatewayV2|Serverless::(Api|HttpApi))\b", text) is not None

    def read_config(self, text: str, source: str = "config") -> PeerConfig:
        found = read_template(text, source)
        if not found.throttles and not found.quotas:
            raise PeerError(f"{source}: no stage, route or usage plan throttling: nothing in the file limits requests "
                            f"(only the account's default {ACCOUNT_RATE:,.0f}/s, burst {ACCOUNT_BURST:,.0f} would)")
        limits = []
        findings = _findings(found)
        for t in found.throttles:
            if t.rate > 0 and t.burst >= 1:
                limits.append(ConfigLimit(t.name, Policy(t.rate, 1.0, t.burst), "api_key" if t.per_key else "global",
                                          scope="fleet"))
        if not limits:
            raise PeerError(f"{source}: only quotas or zero throttles: validate simulates request rates, and no level "
                            "has one above 0")
        notes = [f"account: {ACCOUNT_RATE:,.0f}/s, burst {ACCOUNT_BURST:,.0f}: the account's default bucket in the "
                 "Region, shared by every API of the account (one hot API throttles the others); a level that leaves "
                 "its rate or burst unset inherits it"]
        if len(limits) > 1:
            notes.append("validate layers every level on one route (the smallest wins); AWS applies a method's or "
                         "route's own setting instead of its stage's default on that method alone")
        notes += [f"{q.where}: {q.name}: {q.limit:g} per {q.period_s / 86400:g} days per API key, not simulated (a "
                  "window of days); AWS says usage plan limits can be exceeded: not for controlling costs"
                  for q in found.quotas]
        return PeerConfig(limits, retry_after=False, cache_control=None, reject_status=429, notes=notes,
                          findings=findings, lints=LINTS, approximate=WHY)

    def policy_from_config(self, text: str) -> Policy:
        return self.read_config(text).limits[0].policy


def _findings(found: Template) -> list[ConfigFinding]:
    """AWS's pitfalls in the template: a burst below the rate, a plan that limits no key's rate,
    a stage's bucket every client shares."""
    out = []
    for t in found.throttles:
        if t.rate <= 0 or t.burst < 1:
            out.append(ConfigFinding("aws_burst_below_rate", t.where, f"{t.name}: rate {t.rate:g}/s, burst {t.burst:g}: "
                                     "API Gateway throttles every request", "a burst of at least 1 and a rate above 0"))
        elif t.burst < t.rate:
            out.append(ConfigFinding("aws_burst_below_rate", t.where,
                                     f"{t.name}: burst {t.burst:g} below the rate {t.rate:g}/s: the burst is what may "
                                     f"arrive at any moment, not per second, so {t.rate:g} requests sent together are "
                                     f"throttled beyond {t.burst:g} (awsdocs/aws-cloudformation-user-guide#781)",
                                     f"burst >= {t.rate:g}"))
    for where, missing in found.plans_without:
        out.append(ConfigFinding("aws_usage_plan", where, f"a usage plan without {missing}: no API key's rate is limited "
                                 "below the stage's, so one key can take the whole stage's bucket",
                                 "Throttle: {RateLimit: ..., BurstLimit: ...} (and a Quota for a key's allowance)"))
    shared = [t for t in found.throttles if not t.per_key]
    if shared and len(shared) == len(found.throttles):
        t = shared[0]
        out.append(ConfigFinding("aws_scope", t.where,
                               f"{t.name}: one bucket for every client of the stage or method, not one per client: "
                               "one noisy client throttles everyone (#31 of serverless-api-gateway-throttling)",
                               "a usage plan with API keys (a bucket per key), or an AWS WAF rate-based rule per IP"))
    return out
