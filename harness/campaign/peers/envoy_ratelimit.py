"""envoyproxy/ratelimit's descriptor config (the global rate-limit service's YAML, one ``domain``
per file) read for ``validate``: each ``rate_limit`` of the descriptor tree a limit of the exact
model ``envoy_ratelimit_window`` (targets/algorithms/, citing the source), its pitfalls named by
YAML path. The service's fields are the README's ("Configuration", envoyproxy/ratelimit @f2fb1577).

A descriptor without ``value`` keeps one counter per value the request carries (per client when
the value names one: ``remote_address`` is the client address, anything else a header or key the
Envoy ``actions`` put there); with ``value`` one counter for every request carrying that value.
Every counter lives in the service's Redis: shared by every Envoy in front of it.
"""

from __future__ import annotations

from typing import Any

from targets.algorithms import Policy

from .base import ConfigFinding, ConfigLimit, PeerConfig, PeerError
from .manifest import Document, Path_, documents, dotted
from .modelled import ModelledPeer, simulated

UNITS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 604800, "month": 2592000, "year": 31536000}
"""The config's units in seconds (src/utils/utilities.go:20-39); the model refuses any other window."""
LINTS = ("ratelimit_fixed_window", "ratelimit_refusals_counted", "ratelimit_shadow_mode", "ratelimit_calendar")
REFUSED_FIELDS = {"replaces": "drops another named limit for matching requests",
                  "share_threshold": "shares one counter across a wildcard's values"}
KNOWN = {"key", "value", "rate_limit", "descriptors", "shadow_mode", "detailed_metric", "replaces", "share_threshold"}


def _where(doc: Document, path: Path_) -> str:
    return f"line {doc.line(path)} ({dotted(path)})"


class EnvoyRatelimit(ModelledPeer):
    name = "envoy-ratelimit"
    system = "envoyproxy/ratelimit"
    summary = ("envoyproxy/ratelimit descriptor YAML (the global service behind Envoy's ratelimit filter): "
               "epoch-aligned fixed windows, refusals counted; modelled by envoy_ratelimit_window (not run here)")
    algorithm = "envoy_ratelimit_window"
    source = "envoyproxy/ratelimit @f2fb1577 (2026-07-05)"
    why_not_run = "a Go service with no binary in a registry reachable here"

    def recognises(self, text: str) -> bool:
        return "domain:" in text and "descriptors:" in text and "requests_per_unit" in text

    def read_config(self, text: str, source: str = "config") -> PeerConfig:
        docs = [d for d in documents(text, "ratelimit") if isinstance(d.data, dict)]
        if not docs or "domain" not in docs[0].data:
            raise PeerError("no domain: not an envoyproxy/ratelimit config (domain: ..., descriptors: [...])")
        if len(docs) > 1:
            raise PeerError(f"line {docs[1].line(())}: a second domain; the service reads one per file")
        doc = docs[0]
        reader = _Reader(doc)
        reader.walk(doc.get(("descriptors",)) or [], ("descriptors",), [])
        if not reader.limits:
            raise PeerError("no rate_limit refuses anything (none, or every one unlimited or in shadow_mode)")
        self.modelled(reader.limits)
        if reader.overlapping():
            reader.findings.append(ConfigFinding(
                "ratelimit_refusals_counted", _where(doc, ("descriptors",)),
                "a request refused by one descriptor is still counted by every other it matches (INCRBY before the "
                "decision): a client refused on one limit spends its others",
                "STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=true in the service's environment"))
        limits, left_out = simulated(reader.limits)
        if not limits:
            raise PeerError("only units longer than the simulation spans (week, month, year): give a shorter unit beside them")
        notes = [self.verdict_note, *reader.notes, *left_out,
                 "Envoy's ratelimit filter fails open (failure_mode_deny: false): when the service is unreachable "
                 "every request passes"]
        return PeerConfig(limits, reject_status=429, notes=notes, findings=reader.findings, lints=LINTS)


class _Reader:
    """One walk of the descriptor tree; every limit and finding named by its YAML path."""

    def __init__(self, doc: Document) -> None:
        self.doc = doc
        self.limits: list[ConfigLimit] = []
        self.findings: list[ConfigFinding] = []
        self.notes: list[str] = []
        self.entries: list[list[tuple[str, str | None]]] = []
        """Each limit's descriptor entries, (key, value or None), root first."""

    def overlapping(self) -> bool:
        """Whether one request can match two limits: unless they differ in the value of a shared
        first key (``database=users`` and ``database=default`` never meet), Envoy's actions may send both."""
        firsts = self.entries
        return any(not (a[0][0] == b[0][0] and None not in (a[0][1], b[0][1]) and a[0][1] != b[0][1])
                   for i, a in enumerate(firsts) for b in firsts[i + 1:])

    def walk(self, descriptors: Any, path: Path_, parents: list[str],
             chain: list[tuple[str, str | None]] | None = None) -> None:
        if not isinstance(descriptors, list):
            raise PeerError(f"{_where(self.doc, path)}: descriptors is a list of {{key, value, rate_limit, descriptors}}")
        for i, d in enumerate(descriptors):
            at = (*path, i)
            if not isinstance(d, dict) or "key" not in d:
                raise PeerError(f"{_where(self.doc, at)}: a descriptor without key")
            chain = chain or []
            for field, why in REFUSED_FIELDS.items():
                if field in d or field in (d.get("rate_limit") or {}):
                    where = (*at, field) if field in d else (*at, "rate_limit", field)
                    raise PeerError(f"{_where(self.doc, where)}: {field} {why}: validate does not model it")
            for field in sorted(set(d) - KNOWN):
                self.notes.append(f"{_where(self.doc, (*at, field))}: {field}: not a descriptor field; the service "
                                  "refuses the config")
            name = f"{d['key']}={d['value']}" if "value" in d else str(d["key"])
            entries = [*chain, (str(d["key"]), str(d["value"]) if "value" in d else None)]
            if "rate_limit" in d and self._limit(d, at, [*parents, name]):
                self.entries.append(entries)
            if "descriptors" in d:
                self.walk(d["descriptors"], (*at, "descriptors"), [*parents, name], entries)

    def _limit(self, d: dict, at: Path_, names: list[str]) -> bool:
        """Read one rate_limit; True when it refuses (not unlimited, not in shadow mode)."""
        rl, where = d["rate_limit"] or {}, (*at, "rate_limit")
        label = "/".join(names)
        if rl.get("unlimited") is True:
            self.notes.append(f"{_where(self.doc, (*where, 'unlimited'))}: {label}: unlimited: never limited")
            return False
        unit, n = str(rl.get("unit", "")).lower(), rl.get("requests_per_unit")
        if unit not in UNITS:
            raise PeerError(f"{_where(self.doc, (*where, 'unit'))}: unit {rl.get('unit')!r}; the service takes "
                            f"{', '.join(u.upper() for u in UNITS)}")
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise PeerError(f"{_where(self.doc, (*where, 'requests_per_unit'))}: requests_per_unit is a whole number")
        if d.get("shadow_mode") is True:
            self.findings.append(ConfigFinding("ratelimit_shadow_mode", _where(self.doc, (*at, "shadow_mode")),
                                               f"{label}: shadow_mode counts but never refuses: {n} per {unit} is not enforced",
                                               "remove shadow_mode once its stats look right"))
            return False
        if n == 0:
            raise PeerError(f"{_where(self.doc, (*where, 'requests_per_unit'))}: requests_per_unit 0 refuses every request")
        key = "ip" if d["key"] == "remote_address" else "api_key"
        self.limits.append(ConfigLimit(label.replace("=", "-").replace("/", "."), Policy(n, UNITS[unit]), key,
                                       self.doc.line(where), scope="fleet"))
        self.findings.append(ConfigFinding(
            "ratelimit_fixed_window", _where(self.doc, (*where, "unit")),
            f"{label}: {n} per {unit} in windows aligned to the epoch: up to {2 * n} pass around an edge (2x)",
            "no setting changes it: halve requests_per_unit if 2x is too many, or add a token bucket in front "
            "(Envoy local_ratelimit)"))
        if unit in ("month", "year"):
            self.findings.append(ConfigFinding(
                "ratelimit_calendar", _where(self.doc, (*where, "unit")),
                f"{label}: a {unit} is {UNITS[unit] // 86400} days counted from 1970-01-01, not a calendar {unit}",
                "state the limit per day or week if it must follow the calendar"))
        if "value" in d:
            self.notes.append(f"{_where(self.doc, at)}: {label}: one counter for every request whose {d['key']} is "
                              f"{d['value']} (the simulation keys it per client)")
        return True
