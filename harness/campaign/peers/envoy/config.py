"""A user's Envoy file read for ``validate``: every ``envoy.filters.http.local_ratelimit`` bucket
of an Envoy bootstrap (``http_filters``, a route's or virtual host's ``typed_per_filter_config``)
or of an Istio ``EnvoyFilter`` manifest (its ``configPatches[].patch.value``), with its token
bucket, the pitfalls of its fields named by YAML path and line, and the message the live run
gives a real Envoy.

What the fields mean, from the filter's source (Envoy 1.40, ``source/extensions/filters/http/
local_ratelimit/local_ratelimit.cc``, ``FilterConfig``): ``filter_enabled``/``filter_enforced``
unset are *off* (``enabled()``/``enforced()`` return false: nothing is limited; enabled but not
enforced counts and forwards); ``tokens_per_fill`` defaults to 1; a route's message replaces the
listener's (its own bucket, its own enabled/enforced) and must carry a ``token_bucket``;
``always_consume_default_token_bucket`` defaults to true; a refusal is ``status`` (429; below 400
means 429) with the body ``local_rate_limited`` and only ``response_headers_to_add`` (no
Retry-After of its own). Descriptors match a request's descriptor entries verbatim (an empty
value: one bucket per distinct value); the entries come from ``rate_limits`` actions.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from targets.algorithms import Policy

from ..base import ConfigFinding, ConfigLimit, PeerConfig, PeerError
from ..manifest import Document, Path_, documents, dotted, replicas_in

FILTER = "envoy.filters.http.local_ratelimit"
MESSAGE = "envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit"
TYPED_STRUCTS = ("udpa.type.v1.TypedStruct", "xds.type.v3.TypedStruct")
ROUTE_FILTER_CONFIG = "envoy.config.route.v3.FilterConfig"
LINTS = ("envoy_enabled_enforced", "envoy_descriptor_matches", "envoy_retry_after", "envoy_filter_in_chain",
         "envoy_cluster_share")
READ = {"stat_prefix", "status", "token_bucket", "filter_enabled", "filter_enforced", "response_headers_to_add",
        "descriptors", "stage", "local_rate_limit_per_downstream_connection", "local_cluster_rate_limit",
        "always_consume_default_token_bucket", "rate_limits"}
NOT_MODELLED = {
    "enable_x_ratelimit_headers": "the x-ratelimit-* headers are not simulated (--live shows them)",
    "rate_limited_as_resource_exhausted": "gRPC only: the status a refused gRPC call gets",
    "request_headers_to_add_when_not_enforced": "headers added upstream in shadow mode",
    "vh_rate_limits": "which virtual host rate_limits make descriptors (descriptors are matched against every action in the file)",
    "max_dynamic_descriptors": "how many distinct values a dynamic descriptor keeps (LRU, default 20)",
}
"""Fields read as Envoy does but not simulated: a note each, the verdict unchanged."""
DENOMINATORS = {"HUNDRED": 100, "TEN_THOUSAND": 10_000, "MILLION": 1_000_000}
STATUS_NAMES = {"TooManyRequests": 429, "ServiceUnavailable": 503, "Forbidden": 403, "BadRequest": 400,
                "Unauthorized": 401, "NotFound": 404, "InternalServerError": 500, "BadGateway": 502,
                "GatewayTimeout": 504, "Conflict": 409, "Gone": 410}
ACTION_KEYS = {"source_cluster": "source_cluster", "destination_cluster": "destination_cluster",
               "remote_address": "remote_address", "masked_remote_address": "masked_remote_address",
               "generic_key": "generic_key", "header_value_match": "header_match",
               "query_parameter_value_match": "query_match"}
"""The descriptor key each rate_limits action writes when it names none (Envoy's defaults)."""
_DURATION = re.compile(r"^(\d+(?:\.\d{1,9})?)s$")


@dataclass(frozen=True)
class Bucket:
    """One LocalRateLimit message with a token bucket: where it is and what it says."""

    doc: Document
    path: Path_
    message: dict[str, Any]
    label: str
    route: bool
    """Found in a ``typed_per_filter_config`` (a route's or virtual host's own bucket)."""
    filter_name: str
    """The http_filters name it belongs to (a route's key in typed_per_filter_config)."""


@dataclass
class EnvoyFile:
    """What validate reads of the file, and the LocalRateLimit message of each limit (the live run
    puts the first into the filter chain of the Envoy it starts)."""

    config: PeerConfig
    messages: list[dict[str, Any]] = field(default_factory=list)


def read_envoy(text: str, source: str = "config") -> EnvoyFile:
    """Every local rate limit bucket of the file; a PeerError naming the path where a field cannot
    be read, or the file when it limits nothing."""
    return _Reader(documents(text, source), source).read()


def recognises(text: str) -> bool:
    return FILTER in text or MESSAGE in text


def _type(node: Any) -> str:
    return str(node.get("@type", "")).rsplit("/", 1)[-1] if isinstance(node, dict) else ""


def resolve(typed: Any, path: Path_) -> tuple[dict[str, Any], Path_] | None:
    """A LocalRateLimit message inside a ``typed_config`` (direct, a TypedStruct, a route
    FilterConfig wrapper) and its path; None for any other message."""
    kind = _type(typed)
    if kind == MESSAGE:
        return {k: v for k, v in typed.items() if k != "@type"}, path
    if kind in TYPED_STRUCTS and str(typed.get("type_url", "")).rsplit("/", 1)[-1] == MESSAGE:
        value = typed.get("value") or {}
        return value, (*path, "value")
    if kind == ROUTE_FILTER_CONFIG:
        return resolve(typed.get("config"), (*path, "config"))
    return None


class _Reader:
    def __init__(self, docs: list[Document], source: str) -> None:
        self.docs, self.source = docs, source
        self.buckets: list[Bucket] = []
        self.chain: set[str] = set()
        """The names of the local_ratelimit filters some http_filters (or HTTP_FILTER patch) inserts."""
        self.actions: list[tuple[int, list[tuple[str | None, str | None]]]] = []
        """(stage, [(descriptor key, fixed value)]) of every rate_limits entry in the file."""
        self.findings: list[ConfigFinding] = []
        self.notes: list[str] = []

    def where(self, doc: Document, path: Path_) -> str:
        return doc.where(self.source, path)

    def read(self) -> EnvoyFile:
        for doc in self.docs:
            self._walk(doc, doc.data, ())
        if not self.buckets:
            raise PeerError(f"no {FILTER} with a token_bucket: the file limits nothing")
        limits, messages = [], []
        for b in self.buckets:
            limits += self._limits(b)
            messages += [b.message] * (len(limits) - len(messages))
        share = [b for b in self.buckets if "local_cluster_rate_limit" in b.message]
        config = PeerConfig(limits, retry_after=all([self._retry_after(b) for b in self.buckets]),
                            reject_status=self._status(self.buckets[0]), notes=self.notes, findings=self.findings,
                            lints=LINTS, replicas=replicas_in(self.docs),
                            approximate=None if not share else (
                                "local_cluster_rate_limit: each member refills at 1/N of the rate and asks N tokens a "
                                "request; the fleet is modelled as one bucket of the stated size (exact only when the "
                                "balancer spreads requests evenly)"))
        return EnvoyFile(config, messages)

    def _walk(self, doc: Document, node: Any, path: Path_) -> None:
        if isinstance(node, dict):
            found = resolve(node["typed_config"], (*path, "typed_config")) if "typed_config" in node else None
            if found:
                name = str(node.get("name", FILTER))
                if self._in_chain(doc, path):
                    self.chain.add(name)
                self._bucket(doc, found, name, route=False)
            if "rate_limits" in node and isinstance(node["rate_limits"], list):
                self._rate_limits(node["rate_limits"])
            for key, value in node.items():
                if key == "typed_per_filter_config" and isinstance(value, dict):
                    for name, typed in value.items():
                        if found := resolve(typed, (*path, key, name)):
                            self._bucket(doc, found, str(name), route=True)
                elif not (key == "typed_config" and found):
                    self._walk(doc, value, (*path, key))
        elif isinstance(node, list):
            for i, item in enumerate(node):
                self._walk(doc, item, (*path, i))

    @staticmethod
    def _in_chain(doc: Document, path: Path_) -> bool:
        """An http_filters entry, or the value of an Istio patch that inserts an HTTP filter."""
        if len(path) >= 2 and path[-2] == "http_filters":
            return True
        return path[-2:] == ("patch", "value") and doc.get((*path[:-2], "applyTo")) == "HTTP_FILTER"

    def _bucket(self, doc: Document, found: tuple[dict[str, Any], Path_], name: str, *, route: bool) -> None:
        message, path = found
        if not isinstance(message, dict):
            raise PeerError(f"{self.where(doc, path)}: a LocalRateLimit message is a mapping")
        for key in message:
            if key not in READ and key not in NOT_MODELLED:
                raise PeerError(f"{self.where(doc, (*path, key))}: {key}: not a field of {MESSAGE} (Envoy refuses the file)")
        for key, why in NOT_MODELLED.items():
            if key in message:
                self.notes.append(f"{self.where(doc, (*path, key))}: {key} is not modelled: {why}")
        if "rate_limits" in message and isinstance(message["rate_limits"], list):
            self._rate_limits(message["rate_limits"])
        if "token_bucket" not in message:
            if route:  # FilterConfig's constructor throws
                raise PeerError(f"{self.where(doc, path)}: a per-route {FILTER} needs a token_bucket "
                                "(Envoy: \"local rate limit token bucket must be set for per filter configs\")")
            return  # a filter that only enables the routes' buckets
        label = str(message.get("stat_prefix") or name)
        if route:
            owner = doc.get(path[:path.index("typed_per_filter_config")]) if "typed_per_filter_config" in path else {}
            match = owner.get("match", {}) if isinstance(owner, dict) else {}
            at = (owner.get("name") if isinstance(owner, dict) else None) or next(
                (f"{k} {v}" for k, v in match.items() if isinstance(v, str)), None) or dotted(path)
            label = f"{label} ({at})"
        self.buckets.append(Bucket(doc, path, message, label, route, name))

    def _rate_limits(self, entries: list[Any]) -> None:
        for entry in entries:
            if not isinstance(entry, dict):
                continue
            seq = [_action_entry(a) for a in entry.get("actions") or [] if isinstance(a, dict)]
            self.actions.append((int(entry.get("stage", 0) or 0), seq))

    def _limits(self, b: Bucket) -> list[ConfigLimit]:
        m, doc = b.message, b.doc
        policy = _policy(m["token_bucket"], self.where(doc, (*b.path, "token_bucket")))
        line = doc.line((*b.path, "token_bucket"))
        self._enabled(b)
        per_connection = bool(m.get("local_rate_limit_per_downstream_connection"))
        if per_connection:
            if "local_cluster_rate_limit" in m:
                raise PeerError(f"{self.where(doc, (*b.path, 'local_cluster_rate_limit'))}: local_cluster_rate_limit "
                                "with local_rate_limit_per_downstream_connection: true (Envoy refuses the pair)")
            self.notes.append(
                f"{b.label}: local_rate_limit_per_downstream_connection: a bucket per downstream connection, not per "
                "client: a client with N connections (a browser opens up to 6) gets N buckets, one that reconnects "
                "gets a full one; the verdict simulates one connection per client, the least such a client gets")
        if b.route and b.filter_name not in self.chain:
            self.findings.append(ConfigFinding(
                "envoy_filter_in_chain", self.where(doc, b.path),
                f"{b.label}: typed_per_filter_config names {b.filter_name}, which no http_filters entry (or "
                "HTTP_FILTER patch) in this file inserts: Envoy ignores the route's bucket",
                f"add {{name: {b.filter_name}, typed_config: {{'@type': type.googleapis.com/{MESSAGE}, stat_prefix: "
                "...}} to the listener's http_filters, before envoy.filters.http.router"))
        scope = "connection" if per_connection else "fleet" if "local_cluster_rate_limit" in m else "instance"
        limits = [ConfigLimit(b.label, policy, "ip" if per_connection else "global", line, scope)]
        limits += self._descriptors(b, per_connection)
        self._cluster_share(b, policy)
        return limits

    def _enabled(self, b: Bucket) -> None:
        """filter_enabled / filter_enforced: unset is 0% (the trap); below 100% a fraction."""
        fix = "{runtime_key: ..., default_value: {numerator: 100, denominator: HUNDRED}}"
        for name, unset in (("filter_enabled", "the filter checks no request: nothing is limited"),
                            ("filter_enforced", "refusals are only counted (shadow mode): every request is forwarded")):
            value = b.message.get(name)
            where = self.where(b.doc, (*b.path, name) if value is not None else b.path)
            percent = _percent(value, where)
            if percent == 0:
                self.findings.append(ConfigFinding("envoy_enabled_enforced", where,
                                                   f"{b.label}: {name} {'unset (defaults to 0%)' if value is None else 'is 0%'}: {unset}",
                                                   f"{name}: {fix}"))
            elif percent < 100:
                self.findings.append(ConfigFinding("envoy_enabled_enforced", where,
                                                   f"{b.label}: {name} is {percent:g}%: the rest pass unlimited", f"{name}: {fix}"))
            if isinstance(value, dict) and value.get("runtime_key"):
                self.notes.append(f"{where}: runtime key {value['runtime_key']!r} can change {name} at run time; "
                                  "judged at its default_value")

    def _descriptors(self, b: Bucket, per_connection: bool) -> list[ConfigLimit]:
        """A descriptor with one dynamic remote_address entry is a bucket per client address (a
        limit of its own); any other is noted (it limits only the requests it matches)."""
        out = []
        stage = int(b.message.get("stage", 0) or 0)
        for i, d in enumerate(b.message.get("descriptors") or []):
            path = (*b.path, "descriptors", i)
            entries = [(str(e.get("key", "")), str(e.get("value", ""))) for e in d.get("entries") or []]
            shown = ", ".join(f"{k}={v or '*'}" for k, v in entries)
            if not any(s == stage and _matches(entries, seq) for s, seq in self.actions):
                self.findings.append(ConfigFinding(
                    "envoy_descriptor_matches", self.where(b.doc, path),
                    f"{b.label}: descriptor [{shown}] matches no rate_limits actions (stage {stage}) in this file: "
                    "no request ever reaches its bucket",
                    "a rate_limits entry whose actions write exactly these keys, in this order (e.g. request_headers "
                    "with descriptor_key, generic_key with descriptor_value)"))
                continue
            policy = _policy(d.get("token_bucket") or {}, self.where(b.doc, (*path, "token_bucket")))
            if entries == [("remote_address", "")] and not per_connection:
                out.append(ConfigLimit(f"{b.label} [{shown}]", policy, "ip", b.doc.line(path), "client"))
                continue
            self.notes.append(f"{self.where(b.doc, path)}: descriptor [{shown}] ({policy.effective_burst:g} tokens, "
                              f"{policy.limit:g} per {policy.window_s:g} s) limits only the requests it matches: not "
                              "simulated; those requests spend the default bucket too"
                              + ("" if b.message.get("always_consume_default_token_bucket", True) else " only when no descriptor matches"))
        return out

    def _cluster_share(self, b: Bucket, policy: Policy) -> None:
        if "local_cluster_rate_limit" not in b.message:
            return
        members = self._local_members(b.doc)
        where = self.where(b.doc, (*b.path, "local_cluster_rate_limit"))
        if members is None:
            self.notes.append(f"{where}: the rate is divided among the local cluster's members, which this file does not list")
        elif members > policy.effective_burst:
            self.findings.append(ConfigFinding(
                "envoy_cluster_share", where,
                f"{b.label}: {members} local cluster members and max_tokens {policy.effective_burst:g}: each request asks "
                f"{members} tokens of a bucket that never holds them: every request is refused",
                f"max_tokens >= {members} (the members of the local cluster)"))

    def _local_members(self, doc: Document) -> int | None:
        """The endpoints of the bootstrap's local cluster (cluster_manager.local_cluster_name)."""
        name = doc.get(("cluster_manager", "local_cluster_name"))
        for cluster in doc.get(("static_resources", "clusters")) or []:
            if isinstance(cluster, dict) and cluster.get("name") == name:
                groups = (cluster.get("load_assignment") or {}).get("endpoints") or []
                return sum(len(g.get("lb_endpoints") or []) for g in groups if isinstance(g, dict))
        return None

    def _retry_after(self, b: Bucket) -> bool:
        headers = b.message.get("response_headers_to_add") or []
        keys = {str((h.get("header") or {}).get("key", "")).lower() for h in headers if isinstance(h, dict)}
        if "retry-after" in keys:
            return True
        tb = b.message["token_bucket"]
        wait = math.ceil(_seconds(tb.get("fill_interval"), "") / int(tb.get("tokens_per_fill", 1) or 1))
        self.findings.append(ConfigFinding(
            "envoy_retry_after", self.where(b.doc, (*b.path, "response_headers_to_add") if headers else b.path),
            f"{b.label}: the 429 carries no Retry-After (Envoy adds none of its own): clients retry at once",
            f"response_headers_to_add: [{{header: {{key: retry-after, value: \"{wait}\"}}}}]"))
        return False

    def _status(self, b: Bucket) -> int:
        code = (b.message.get("status") or {}).get("code")
        if code is None:
            return 429
        value = STATUS_NAMES.get(code, code) if isinstance(code, str) else code
        if not isinstance(value, int):
            raise PeerError(f"{self.where(b.doc, (*b.path, 'status', 'code'))}: status code {code!r}: validate reads a "
                            f"number or one of {', '.join(STATUS_NAMES)}")
        return value if value >= 400 else 429  # toErrorCode: below 400 is 429


def _action_entry(action: dict[str, Any]) -> tuple[str | None, str | None]:
    """The (descriptor key, fixed value) one rate_limits action writes; (None, None): any."""
    kind, body = next(iter(action.items()), (None, None))
    body = body if isinstance(body, dict) else {}
    key = body.get("descriptor_key") or ACTION_KEYS.get(str(kind))
    return key, body.get("descriptor_value")


def _matches(entries: list[tuple[str, str]], seq: list[tuple[str | None, str | None]]) -> bool:
    """Verbatim, in order: same keys; a fixed value equal (an empty entry value takes any)."""
    return len(entries) == len(seq) and all(
        (k2 is None or k == k2) and (not v or v2 is None or v == v2) for (k, v), (k2, v2) in zip(entries, seq))


def _seconds(value: Any, where: str) -> float:
    """A protobuf Duration as YAML writes it: ``"1s"``, ``"0.5s"``."""
    m = _DURATION.match(str(value)) if isinstance(value, str) else None
    if not m:
        raise PeerError(f"{where}: fill_interval {value!r}: a protobuf Duration such as \"1s\" or \"0.5s\"")
    return float(m[1])


def _policy(tb: Any, where: str) -> Policy:
    """``max_tokens`` at once, ``tokens_per_fill`` per ``fill_interval``: Policy(tpf, fill, max)."""
    if not isinstance(tb, dict):
        raise PeerError(f"{where}: token_bucket is a mapping (max_tokens, tokens_per_fill, fill_interval)")
    max_tokens, per_fill = tb.get("max_tokens"), tb.get("tokens_per_fill", 1)
    for name, value in (("max_tokens", max_tokens), ("tokens_per_fill", per_fill)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise PeerError(f"{where}.{name}: {value!r}: a whole number >= 1")
    seconds = _seconds(tb.get("fill_interval"), f"{where}.fill_interval")
    if seconds < 0.05:
        raise PeerError(f"{where}.fill_interval: {seconds:g} s; Envoy refuses a fill_interval under 50 ms")
    return Policy(per_fill, seconds, max_tokens)


def _percent(value: Any, where: str) -> float:
    """A RuntimeFractionalPercent's default in percent (unset: 0, Envoy's default)."""
    if value is None:
        return 0.0
    default = value.get("default_value") if isinstance(value, dict) else None
    if not isinstance(default, dict):
        return 0.0
    denominator = DENOMINATORS.get(str(default.get("denominator", "HUNDRED")))
    numerator = default.get("numerator", 0)
    if denominator is None or not isinstance(numerator, int):
        raise PeerError(f"{where}: default_value {default}: numerator a whole number, denominator one of "
                        f"{', '.join(DENOMINATORS)}")
    return min(100.0, 100 * numerator / denominator)
