"""The Envoy bootstrap the suite runs: one listener on 127.0.0.1 with a ``local_ratelimit`` filter
(the policy's bucket, or a user's own LocalRateLimit message) in front of a downstream, every
request logged with the time Envoy received it and its response flags; and ``envoy --mode
validate``, Envoy's own parse of a file, as the first lint of ``validate --config``.

No admin listener, hot restart off (no shared memory: several Envoys run at once), one worker
(the bucket is one per process whatever the workers). ``/healthz`` goes to the downstream through
a route whose own bucket is never enabled (``filter_enabled`` unset: Envoy's 0%).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from targets.algorithms import Policy

from ..base import PeerError
from .config import FILTER, MESSAGE

ACCESS_LOG = "envoy-access.log"
STAT_PREFIX = "rb"
LOG_FIELDS = ("start", "status", "flags", "request_id", "client_id", "client_class", "api_key", "remote", "method", "path")
LOG_FORMAT = "\t".join(("%START_TIME(%s.%6f)%", "%RESPONSE_CODE%", "%RESPONSE_FLAGS%", "%REQ(X-REQUEST-ID)%",
                        "%REQ(X-CLIENT-ID)%", "%REQ(X-CLIENT-CLASS)%", "%REQ(X-API-KEY)%",
                        "%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%", "%REQ(:METHOD)%", "%REQ(:PATH)%")) + "\n"
"""Tab-separated, ``-`` for a value Envoy does not have; START_TIME in µs (the stream's start)."""
VALIDATE_TIMEOUT_S = 60.0
ON = {"default_value": {"numerator": 100, "denominator": "HUNDRED"}}


def policy_message(policy: Policy) -> dict[str, Any]:
    """The policy as a LocalRateLimit: B tokens, L per W, enabled and enforced, 429."""
    return {"stat_prefix": STAT_PREFIX, "filter_enabled": ON, "filter_enforced": ON,
            "token_bucket": {"max_tokens": int(policy.effective_burst), "tokens_per_fill": int(policy.limit),
                             "fill_interval": f"{round(policy.window_s * 1000) / 1000:g}s"}}


def bootstrap(message: dict[str, Any], *, port: int, downstream_port: int, logs: Path) -> str:
    """The whole bootstrap (JSON, which Envoy reads as YAML): ``message`` as the listener's filter."""
    typed = {"@type": f"type.googleapis.com/{MESSAGE}", **message}
    healthz = {"@type": f"type.googleapis.com/{MESSAGE}", "stat_prefix": "healthz",
               "token_bucket": {"max_tokens": 1, "fill_interval": "1s"}}
    hcm = {
        "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
        "stat_prefix": "rb", "preserve_external_request_id": True,
        "access_log": [{"name": "envoy.access_loggers.file", "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog",
            "path": str(logs / ACCESS_LOG), "log_format": {"text_format_source": {"inline_string": LOG_FORMAT}}}}],
        "route_config": {"virtual_hosts": [{"name": "rb", "domains": ["*"], "routes": [
            {"match": {"path": "/healthz"}, "route": {"cluster": "downstream"},
             "typed_per_filter_config": {FILTER: healthz}},
            {"match": {"prefix": "/"}, "route": {"cluster": "downstream"}}]}]},
        "http_filters": [{"name": FILTER, "typed_config": typed},
                         {"name": "envoy.filters.http.router", "typed_config": {
                             "@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}],
    }
    endpoint = {"endpoint": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": downstream_port}}}}
    return json.dumps({"static_resources": {
        "listeners": [{"name": "rb", "address": {"socket_address": {"address": "127.0.0.1", "port_value": port}},
                       "filter_chains": [{"filters": [{"name": "envoy.filters.network.http_connection_manager",
                                                       "typed_config": hcm}]}]}],
        "clusters": [{"name": "downstream", "type": "STATIC", "connect_timeout": "5s",
                      "load_assignment": {"cluster_name": "downstream", "endpoints": [{"lb_endpoints": [endpoint]}]}}]}},
        indent=1) + "\n"


def command(executable: str, conf: Path, *extra: str) -> list[str]:
    """Envoy in the foreground on ``conf``: one worker, no hot restart, warnings only, logs flushed
    every 50 ms (the default 10 s would leave a short run's log unwritten until Envoy stops)."""
    return [executable, "-c", str(conf), "--concurrency", "1", "--disable-hot-restart", "--log-level", "warn",
            "--file-flush-interval-msec", "50", *extra]


def envoy_validate(executable: str, text: str) -> str:
    """``envoy --mode validate`` on a bootstrap: Envoy's own "configuration ... OK" line; a
    PeerError with Envoy's error lines when it refuses the file."""
    with tempfile.TemporaryDirectory(prefix="envoy-validate-") as tmp:
        conf = Path(tmp) / "envoy.yaml"
        conf.write_text(text)
        try:
            done = subprocess.run(command(executable, conf, "--mode", "validate"), capture_output=True, text=True,
                                  timeout=VALIDATE_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            raise PeerError(f"envoy --mode validate did not answer within {VALIDATE_TIMEOUT_S:g} s") from None
    lines = [line.strip().replace(f"'{conf}'", "").replace(str(conf), "the file")
             for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    if done.returncode != 0:
        said = [line for line in lines if "critical" in line or "error" in line.lower()] or lines[-3:]
        raise PeerError("envoy --mode validate refused it: " + " / ".join(_message(line) for line in said))
    return next((line for line in reversed(lines) if line.endswith(" OK")), "configuration OK").replace("  ", " ")


def validate_message(executable: str, message: dict[str, Any]) -> str:
    """``envoy --mode validate`` on ``message`` as the filter of the bootstrap the suite runs (its
    access log in a folder of its own: Envoy opens it even when it only validates)."""
    with tempfile.TemporaryDirectory(prefix="envoy-validate-logs-") as logs:
        return envoy_validate(executable, bootstrap(message, port=10000, downstream_port=10001, logs=Path(logs)))


def _message(line: str) -> str:
    """An Envoy log line without its timestamp, thread and source prefix."""
    return line.rsplit("] ", 1)[-1] if line.startswith("[") else line
