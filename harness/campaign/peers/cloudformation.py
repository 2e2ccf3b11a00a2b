"""The throttling levels of an AWS API Gateway CloudFormation or SAM template (YAML with
CloudFormation's short-form tags, or JSON), each with the YAML path it is set at.

Levels, as AWS documents them (docs.aws.amazon.com/apigateway/latest/developerguide/
api-gateway-request-throttling.html): a REST stage's ``MethodSettings`` (``*/*`` the stage's
default, ``{resourcePath}/{httpMethod}`` one method), an HTTP API stage's ``DefaultRouteSettings``
and ``RouteSettings``, and a usage plan's ``Throttle`` and ``Quota`` per API key (its
``ApiStages[].Throttle`` per method). A value the reader cannot read as a number (a ``!Ref`` to a
parameter) is bad input naming its path: the limit would be a guess.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .base import PeerError
from .manifest import Document, Path_, documents

STAGES = ("AWS::ApiGateway::Stage", "AWS::Serverless::Api")
HTTP_STAGES = ("AWS::ApiGatewayV2::Stage", "AWS::Serverless::HttpApi")
PLAN = "AWS::ApiGateway::UsagePlan"
ACCOUNT_RATE, ACCOUNT_BURST = 10000.0, 5000.0
"""The account's default per Region (what a level leaves unset inherits)."""
QUOTA_PERIODS = {"DAY": 86400.0, "WEEK": 604800.0, "MONTH": 2592000.0}
"""A quota's period in seconds (a month as 30 days)."""
METHOD_KEYS = {"ResourcePath", "HttpMethod", "ThrottlingRateLimit", "ThrottlingBurstLimit", "LoggingLevel",
               "MetricsEnabled", "DataTraceEnabled", "CachingEnabled", "CacheTtlInSeconds", "CacheDataEncrypted"}
ROUTE_KEYS = {"ThrottlingRateLimit", "ThrottlingBurstLimit", "DetailedMetricsEnabled", "LoggingLevel", "DataTraceEnabled"}


@dataclass(frozen=True)
class Throttle:
    """One token bucket of a level: ``rate`` per second refilling ``burst``."""

    name: str
    rate: float
    burst: float
    per_key: bool
    """A usage plan's: one bucket per API key; else one for every client of the stage or method."""
    where: str
    path: Path_


@dataclass(frozen=True)
class Quota:
    """A usage plan's quota: ``limit`` requests per ``period_s`` per API key."""

    name: str
    limit: float
    period_s: float
    where: str


@dataclass
class Template:
    throttles: list[Throttle]
    quotas: list[Quota]
    plans_without: list[tuple[str, str]]
    """(where, what is missing) of each usage plan without a Throttle (or without anything)."""


def _number(doc: Document, source: str, path: Path_) -> float:
    value = doc.get(path)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise PeerError(f"{doc.where(source, path)}: {value!r}: validate needs the number itself (a parameter or "
                        "!Ref is not resolved)")
    return float(value)


def _unknown(doc: Document, source: str, path: Path_, known: set[str]) -> None:
    """A key beside the throttle's that is not one AWS documents there: it may change the limit."""
    for key in doc.get(path, {}):
        if key not in known:
            raise PeerError(f"{doc.where(source, (*path, key))}: {key}: not a field validate knows here "
                            f"({', '.join(sorted(known))})")


def _bucket(doc: Document, source: str, path: Path_, name: str, keys: tuple[str, str], per_key: bool) -> Throttle | None:
    rate_key, burst_key = keys
    block = doc.get(path, {})
    if rate_key not in block and burst_key not in block:
        return None
    rate = _number(doc, source, (*path, rate_key)) if rate_key in block else ACCOUNT_RATE
    burst = _number(doc, source, (*path, burst_key)) if burst_key in block else ACCOUNT_BURST
    return Throttle(name, rate, burst, per_key, doc.where(source, path), path)


def _stage(doc: Document, source: str, res: Path_, out: Template) -> None:
    props = (*res, "Properties")
    for i, _ in enumerate(doc.get((*props, "MethodSettings"), []) or []):
        path = (*props, "MethodSettings", i)
        _unknown(doc, source, path, METHOD_KEYS)
        method = f"{doc.get((*path, 'ResourcePath'), '/*')} {doc.get((*path, 'HttpMethod'), '*')}"
        if b := _bucket(doc, source, path, f"{res[-1]} {method}", ("ThrottlingRateLimit", "ThrottlingBurstLimit"), False):
            out.throttles.append(b)


def _http_stage(doc: Document, source: str, res: Path_, out: Template) -> None:
    props = (*res, "Properties")
    routes = [((*props, "DefaultRouteSettings"), "$default")]
    routes += [((*props, "RouteSettings", r), str(r)) for r in doc.get((*props, "RouteSettings"), {}) or {}]
    for path, route in routes:
        _unknown(doc, source, path, ROUTE_KEYS)
        if b := _bucket(doc, source, path, f"{res[-1]} {route}", ("ThrottlingRateLimit", "ThrottlingBurstLimit"), False):
            out.throttles.append(b)


def _plan(doc: Document, source: str, res: Path_, out: Template) -> None:
    props = (*res, "Properties")
    for key in ("Throttle", "Quota"):
        _unknown(doc, source, (*props, key), {"Throttle": {"RateLimit", "BurstLimit"},
                                               "Quota": {"Limit", "Period", "Offset"}}[key])
    throttle = _bucket(doc, source, (*props, "Throttle"), f"{res[-1]} per key", ("RateLimit", "BurstLimit"), True)
    for i, stage in enumerate(doc.get((*props, "ApiStages"), []) or []):
        for method in (stage or {}).get("Throttle", {}) or {}:
            path = (*props, "ApiStages", i, "Throttle", method)
            _unknown(doc, source, path, {"RateLimit", "BurstLimit"})
            if b := _bucket(doc, source, path, f"{res[-1]} {method} per key", ("RateLimit", "BurstLimit"), True):
                out.throttles.append(b)
    quota = doc.get((*props, "Quota"))
    if throttle:
        out.throttles.append(throttle)
    if quota:
        period = doc.get((*props, "Quota", "Period"))
        if period not in QUOTA_PERIODS:
            raise PeerError(f"{doc.where(source, (*props, 'Quota', 'Period'))}: Period {period!r}: DAY, WEEK or MONTH")
        out.quotas.append(Quota(f"{res[-1]} quota", _number(doc, source, (*props, "Quota", "Limit")),
                                QUOTA_PERIODS[period], doc.where(source, (*props, "Quota"))))
    if not throttle:
        out.plans_without.append((doc.where(source, props), "Throttle" + ("" if quota else " nor Quota")))


READERS = {**dict.fromkeys(STAGES, _stage), **dict.fromkeys(HTTP_STAGES, _http_stage), PLAN: _plan}


def read_template(text: str, source: str) -> Template:
    """Every throttling level of the template's resources, in the order the file lists them."""
    out = Template([], [], [])
    for doc in documents(text, source, short_forms=True):
        resources: Any = doc.get(("Resources",), {})
        if not isinstance(resources, dict):
            raise PeerError(f"{doc.where(source, ('Resources',))}: Resources: a mapping of logical ids to resources")
        for logical, res in resources.items():
            read = READERS.get(res.get("Type") if isinstance(res, dict) else None)
            if read is not None:
                read(doc, source, ("Resources", logical), out)
    return out
