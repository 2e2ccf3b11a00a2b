"""caddy-ratelimit's ``rate_limit`` handler read for ``validate`` from Caddy's JSON config (a
Caddyfile through ``caddy adapt`` where the caddy binary is on PATH): each zone a limit of the
exact model ``caddy_ring`` (targets/algorithms/, citing mholt/caddy-ratelimit @5625512f).

The handler provisions its zones from a JSON map and sorts them by ``max_events / window``,
highest first (handler.go:162-178, ratelimit.go:102-104: the most permissive zone decides first,
whatever the comment there says); each zone it passes records the request before a later zone
may refuse it (handler.go:203-226). The suite's layered check in memory spends nothing on a
refusal, so with several zones on one key the model is approximate (the verdict says so).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from targets.algorithms import Policy

from .base import ConfigFinding, ConfigLimit, PeerConfig, PeerError
from .modelled import ModelledPeer

LINTS = ("caddy_key_behind_proxy",)
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h|d)")
_UNIT_S = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
CONNECTION_KEYS = {"{http.request.remote.host}", "{remote_host}", "{http.request.remote}", "{remote}"}
CLIENT_IP_KEYS = {"{http.vars.client_ip}", "{client_ip}"}
ADAPT_TIMEOUT_S = 30


def duration_s(value: object, where: str) -> float:
    """A caddy.Duration: a Go duration string (``5s``, ``1m30s``, Caddy's ``d`` too) or whole ns."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value / 1e9
    text = str(value)
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise PeerError(f"{where}: window {value!r} is not a duration (5s, 1m, 1h30m)")
    return sum(float(n) * _UNIT_S[u] for n, u in parts)


def adapt(text: str) -> dict:
    """A Caddyfile as Caddy's JSON, by the caddy binary itself (its own errors, one line)."""
    caddy = shutil.which("caddy")
    if caddy is None:
        raise PeerError("a Caddyfile is read through `caddy adapt`, and caddy is not on PATH: give its JSON config "
                        "(caddy adapt --config Caddyfile, where caddy-ratelimit is built in)")
    with tempfile.TemporaryDirectory(prefix="validate-caddy-") as tmp:
        path = Path(tmp) / "Caddyfile"
        path.write_text(text, encoding="utf-8")
        done = subprocess.run([caddy, "adapt", "--config", str(path), "--adapter", "caddyfile"], capture_output=True,
                              text=True, timeout=ADAPT_TIMEOUT_S, check=False)
    if done.returncode != 0:
        lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
        raise PeerError(f"caddy adapt: {(lines[-1] if lines else 'failed').replace(str(path), 'Caddyfile')}")
    return json.loads(done.stdout)


def _handlers(node: object, path: str) -> list[tuple[str, dict]]:
    """Every ``rate_limit`` handler of the config, with its JSON path."""
    found: list[tuple[str, dict]] = []
    if isinstance(node, dict):
        if node.get("handler") == "rate_limit":
            found.append((path, node))
        for k, v in node.items():
            found += _handlers(v, f"{path}.{k}" if path else str(k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            found += _handlers(v, f"{path}[{i}]")
    return found


class Caddy(ModelledPeer):
    name = "caddy"
    system = "caddy-ratelimit"
    summary = ("Caddy's rate_limit handler (mholt/caddy-ratelimit), JSON config or a Caddyfile via caddy adapt: an exact "
               "sliding log per zone and key; modelled by caddy_ring (not run here)")
    algorithm = "caddy_ring"
    source = "mholt/caddy-ratelimit @5625512f (2026-06-12)"
    why_not_run = "the Caddy builds a registry here ships lack the rate_limit module (xcaddy needs Go modules)"

    def recognises(self, text: str) -> bool:
        return re.search(r'"handler"\s*:\s*"rate_limit"|^\s*rate_limit\s*\{', text, re.MULTILINE) is not None

    def read_config(self, text: str, source: str = "config") -> PeerConfig:
        if text.lstrip().startswith("{") and '"' in text.lstrip()[:200]:
            try:
                config = json.loads(text)
            except json.JSONDecodeError as exc:
                raise PeerError(f"line {exc.lineno}: not valid JSON ({exc.msg})") from None
        else:
            config = adapt(text)
        handlers = _handlers(config, "")
        if not handlers:
            raise PeerError("no rate_limit handler: nothing in the file limits requests")
        if len(handlers) > 1:
            raise PeerError(f"{handlers[1][0]}: a second rate_limit handler; validate reads one (validate each apart)")
        return self._config(*handlers[0])

    def _config(self, path: str, handler: dict) -> PeerConfig:
        zones = handler.get("rate_limits") or {}
        path = f"{path}." if path else ""
        if not isinstance(zones, dict) or not zones:
            raise PeerError(f"{path}rate_limits: no zone: nothing limits requests")
        limits, findings, notes = [], [], [self.verdict_note]
        for name, z in zones.items():
            at = f"{path}rate_limits.{name}"
            events, window = z.get("max_events", 0), duration_s(z.get("window", 0), f"{at}.window")
            if not isinstance(events, int) or events <= 0:
                raise PeerError(f"{at}.max_events: {events!r}: a zone of max_events 0 refuses every request")
            if window <= 0:
                notes.append(f"{at}: window 0 admits every request (ringbuffer.go:33-37): not a limit")
                continue
            key = str(z.get("key", ""))
            kind = "api_key" if "{http.request.header." in key else "ip"
            if z.get("match"):
                notes.append(f"{at}.match: the zone limits only the requests its matchers select; validate applies "
                             "it to every request")
            if "{" not in key:
                notes.append(f"{at}.key: {key!r} has no placeholder: one counter for every request")
            if key in CONNECTION_KEYS:
                findings.append(ConfigFinding(
                    "caddy_key_behind_proxy", f"{at}.key",
                    f"{key} is the connection's address: behind a proxy or CDN every client shares one counter",
                    "key {http.vars.client_ip} (Caddyfile {client_ip}) with the server's trusted_proxies"))
            limits.append((events / window, ConfigLimit(name, Policy(events, window), kind)))
        if not limits:
            raise PeerError(f"{path}rate_limits: no zone limits anything (every window is 0)")
        ordered = [lim for _, lim in sorted(limits, key=lambda pair: -pair[0])]
        for lim in ordered:
            self.model(lim.policy)
        approximate = None
        if len(ordered) > 1:
            approximate = ("zones decide in turn, most permissive first (handler.go:175-178), and a zone that admits "
                           "records the request even when a later zone refuses it; the simulation spends nothing on a "
                           "refusal")
            notes.append(f"zones in the order Caddy checks them: {', '.join(lim.name for lim in ordered)}; {approximate}")
        if handler.get("distributed") is not None:
            approximate = "distributed: instances exchange their state every read_interval (5 s), 'inherently approximate'"
            notes.append(f"{path}distributed: {approximate} (README); the model counts per instance")
        return PeerConfig(ordered, retry_after=True, reject_status=429, notes=notes, findings=findings, lints=LINTS,
                          approximate=approximate)
