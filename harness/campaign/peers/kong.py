"""Kong's ``rate-limiting`` plugin read from a declarative config (``kong.yml``, decK) for
``validate``: each period it sets (second ... year) a limit of the exact model ``kong_window``
(targets/algorithms/, citing Kong/kong @22246ef2), all keyed alike, so that the layered check
(every period peeked, all counted only when all admit) is Kong's ``get_usage`` then increment
(handler.lua:89-114, 193-216). Fields and defaults: kong/plugins/rate-limiting/schema.lua:49-98.
"""

from __future__ import annotations

from typing import Any

from targets.algorithms import Policy

from .base import ConfigFinding, ConfigLimit, PeerConfig, PeerError
from .manifest import Document, Path_, documents, dotted
from .modelled import ModelledPeer, simulated

PLUGIN = "rate-limiting"
PERIODS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "month": 2592000, "year": 31536000}
"""The plugin's periods as the model kong_window names them (month and year: the calendar's)."""
LINTS = ("kong_limit_by_fallback", "kong_fault_tolerant")
KEYS = {"consumer": "api_key", "credential": "api_key", "header": "api_key", "ip": "ip"}
"""limit_by (schema.lua:86-87, default consumer) -> validate's key kinds; service and path are one
counter for everyone on it."""
KNOWN = {*PERIODS, "policy", "limit_by", "header_name", "path", "fault_tolerant", "hide_client_headers", "error_code",
         "error_message", "sync_rate", "redis", "redis_host", "redis_port", "redis_password", "redis_username",
         "redis_ssl", "redis_ssl_verify", "redis_server_name", "redis_timeout", "redis_database"}


def _where(doc: Document, path: Path_) -> str:
    return f"line {doc.line(path)} ({dotted(path)})"


def _plugins(data: Any, path: Path_) -> list[Path_]:
    """The path of every rate-limiting plugin: global, or under a service, route or consumer."""
    found: list[Path_] = []
    if isinstance(data, dict):
        if data.get("name") == PLUGIN and path and path[-2:-1] == ("plugins",):
            found.append(path)
        for k, v in data.items():
            found += _plugins(v, (*path, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            found += _plugins(v, (*path, i))
    return found


class Kong(ModelledPeer):
    name = "kong"
    system = "Kong rate-limiting"
    summary = ("Kong's rate-limiting plugin from a declarative kong.yml: UTC-calendar windows per period, counted "
               "after the decision, per node (policy local); modelled by kong_window (not run here)")
    algorithm = "kong_window"
    source = "Kong/kong @22246ef2 (2026-07-01), kong/plugins/rate-limiting/"
    why_not_run = "no Kong or OpenResty in a registry reachable here"

    def recognises(self, text: str) -> bool:
        return "_format_version" in text and PLUGIN in text

    def read_config(self, text: str, source: str = "config") -> PeerConfig:
        docs = [d for d in documents(text, "kong") if isinstance(d.data, dict)]
        found = [(d, p) for d in docs for p in _plugins(d.data, ())]
        if not found:
            raise PeerError(f"no {PLUGIN} plugin: nothing in the file limits requests")
        if len(found) > 1:
            doc, path = found[1]
            raise PeerError(f"{_where(doc, path)}: a second {PLUGIN} plugin; Kong applies the most specific one "
                            "to a request: validate each apart")
        doc, path = found[0]
        return self._config(doc, path)

    def _config(self, doc: Document, path: Path_) -> PeerConfig:
        at = (*path, "config")
        conf = doc.get(at) or {}
        if doc.get((*path, "enabled")) is False:
            raise PeerError(f"{_where(doc, (*path, 'enabled'))}: the plugin is disabled: nothing limits requests")
        notes = [self.verdict_note]
        notes += [f"{_where(doc, (*at, f))}: {f}: not a {PLUGIN} field; Kong refuses the config" for f in sorted(set(conf) - KNOWN)]
        limit_by, policy = conf.get("limit_by", "consumer"), conf.get("policy", "local")
        if limit_by not in KEYS:
            raise PeerError(f"{_where(doc, (*at, 'limit_by'))}: limit_by {limit_by}: one counter for every request of "
                            "the service or path; validate models per-client keys (consumer, credential, ip, header)")
        if policy not in ("local", "cluster", "redis"):
            raise PeerError(f"{_where(doc, (*at, 'policy'))}: policy {policy!r}; Kong takes local, cluster or redis")
        scope = "client" if policy == "local" else "fleet"
        limits = []
        for period, window_s in PERIODS.items():
            n = conf.get(period)
            if n is None:
                continue
            if not isinstance(n, int | float) or isinstance(n, bool) or n <= 0 or n != int(n):
                raise PeerError(f"{_where(doc, (*at, period))}: {period}: {n!r}; Kong counts whole requests (> 0)")
            limits.append(ConfigLimit(period, Policy(int(n), window_s), KEYS[limit_by], doc.line((*at, period)), scope))
        if not limits:
            raise PeerError(f"{_where(doc, at)}: no second, minute, hour, day, month or year: nothing limits requests")
        for lim in limits:
            self.model(lim.policy)
        findings = []
        if limit_by in ("consumer", "credential", "header"):
            findings.append(ConfigFinding(
                "kong_limit_by_fallback", _where(doc, (*at, "limit_by")),
                f"limit_by {limit_by}{' (the default)' if 'limit_by' not in conf else ''}: a request without one is "
                "counted by its client address (handler.lua:85); behind a proxy every anonymous client shares one counter",
                "an authentication plugin on the same route, or trusted_ips and real_ip_header for the address"))
        if policy != "local" and conf.get("fault_tolerant", True):
            findings.append(ConfigFinding(
                "kong_fault_tolerant", _where(doc, (*at, "fault_tolerant") if "fault_tolerant" in conf else at),
                f"fault_tolerant (default true) with policy {policy}: while the store fails every request passes",
                "fault_tolerant: false, if a store outage should refuse (clients then get 500)"))
        if policy == "local":
            notes.append(f"{_where(doc, (*at, 'policy'))}: policy local{' (the default)' if 'policy' not in conf else ''}: "
                         "each Kong node counts its own (validate --replicas N judges the fleet)")
        if policy == "redis" and conf.get("sync_rate", -1) != -1:
            notes.append(f"{_where(doc, (*at, 'sync_rate'))}: sync_rate {conf['sync_rate']}: counters reach Redis every "
                         f"{conf['sync_rate']} s; the model counts at once")
        notes.append("Kong counts an admitted request after the decision (ngx.timer.at): concurrent requests reading "
                     "the same usage over-admit; the model decides one request at a time")
        hidden = conf.get("hide_client_headers", False) is True
        limits, left_out = simulated(limits)
        if not limits:
            raise PeerError(f"{_where(doc, at)}: only periods longer than the simulation spans (a week): judge them "
                            "on a log with a shorter period beside them")
        notes += left_out
        return PeerConfig(limits, retry_after=not hidden, reject_status=int(conf.get("error_code", 429)), notes=notes,
                          findings=findings, lints=LINTS)
