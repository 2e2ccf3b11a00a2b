"""kubernetes/ingress-nginx: an Ingress manifest's ``nginx.ingress.kubernetes.io/limit-*``
annotations rendered into the NGINX lines the controller generates, then read as an NGINX file
(nginx_config.py), so the NGINX model, lints and live run judge them.

What the controller renders (kubernetes/ingress-nginx @dbb11b92, 2026-03-20, the last commit
before the project was retired in March 2026):
- ``internal/ingress/annotations/ratelimit/main.go:35`` ``defBurst = 5``: the burst multiplier's
  default; ``:262-280`` each zone's burst is ``limit x multiplier``; the zone is named
  ``<namespace>_<name>_<uid>`` and its key variable ``$limit_<base64url(name)>`` (``:259, 286-289``);
- ``internal/ingress/controller/template/template.go:841-858`` ``limit_req_zone $limit_<id>
  zone=<zone>_rpm:5m rate=<N>r/m;`` and ``..._rps:5m rate=<N>r/s;`` (zones sorted, ``:864``);
  ``:885-895`` ``limit_req zone=<zone>_rps burst=<B> nodelay;`` first, then ``_rpm``; ``:879-883``
  ``limit_conn <zone>_conn <N>;``;
- ``rootfs/etc/nginx/template/nginx.tmpl:542-555`` a ``geo $remote_addr`` allow list mapping to
  ``$limit_<id>``: allow-listed addresses get the empty key (never limited), others
  ``limit-conn-zone-variable`` (``config.go:86``: ``$binary_remote_addr``);
- ``nginx.tmpl:305-306`` ``limit_req_status`` / ``limit_conn_status`` from the ConfigMap's
  ``limit-req-status-code`` / ``limit-conn-status-code``, both 503 by default (``config.go:905-906``).
Rates are per controller replica ("Rate limits are applied per Ingress NGINX controller replica",
kubernetes/ingress-nginx:docs/user-guide/nginx-configuration/annotations.md).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field, replace

from .base import ConfigFinding, PeerConfig, PeerError
from .manifest import Document, Path_, documents, dotted, replicas_in
from .nginx import Nginx
from .nginx_config import read_nginx

PREFIX = "nginx.ingress.kubernetes.io/"
DEFAULT_MULTIPLIER = 5
"""annotations/ratelimit/main.go:35."""
DEFAULT_STATUS = 503
"""config.go:905-906."""
RETIRED = ("ingress-nginx was retired in March 2026 (its README: best-effort maintenance until March 2026, no "
           "further releases): these limits get no fixes; plan the move (Gateway API, another controller)")
KNOWN = {"limit-rps", "limit-rpm", "limit-burst-multiplier", "limit-connections", "limit-allowlist", "limit-whitelist"}
NOT_A_RATE = {"limit-rate": "limits bandwidth (KB/s), not requests",
              "limit-rate-after": "limits bandwidth after N KB, not requests"}
CONFIGMAP_KEYS = ("limit-req-status-code", "limit-conn-status-code", "limit-conn-zone-variable", "use-forwarded-headers")
LINTS = ("ingress_status_code", "ingress_burst_multiplier", "ingress_per_replica")


@dataclass
class Rendered:
    """An Ingress's limits as the controller renders them, and what validate reads of them."""

    nginx: str
    """The rendered lines: an NGINX file validate reads (and runs live)."""
    config: PeerConfig
    notes: list[str] = field(default_factory=list)


def _where(doc: Document, path: Path_) -> str:
    return f"line {doc.line(path)} ({dotted(path)})"


def _int(doc: Document, path: Path_, value: object) -> int:
    """An annotation's whole number as the controller parses it (parser.ValidateInt)."""
    text = str(value).strip()
    if not text.isdigit():
        raise PeerError(f"{_where(doc, path)}: {value!r} is not a whole number (ingress-nginx rejects the Ingress)")
    return int(text)


def _kind(docs: list[Document], kind: str) -> list[Document]:
    return [d for d in docs if isinstance(d.data, dict) and d.data.get("kind") == kind]


def _limited(docs: list[Document]) -> Document:
    """The one Ingress whose annotations limit requests."""
    found = [d for d in _kind(docs, "Ingress")
             if any(str(k).startswith(PREFIX + "limit-") for k in (d.get(("metadata", "annotations")) or {}))]
    if not found:
        raise PeerError("no Ingress with nginx.ingress.kubernetes.io/limit-* annotations: nothing in the file limits requests")
    if len(found) > 1:
        raise PeerError(f"{_where(found[1], ('metadata', 'annotations'))}: a second Ingress with limits; each Ingress "
                        "has zones of its own: validate each apart")
    return found[0]


def _configmap(docs: list[Document]) -> tuple[Document | None, dict]:
    """The controller's ConfigMap in the same file (the one that sets a limit key), if any."""
    maps = [d for d in _kind(docs, "ConfigMap") if any(k in (d.get(("data",)) or {}) for k in CONFIGMAP_KEYS)]
    if len(maps) > 1:
        raise PeerError(f"{_where(maps[1], ('data',))}: a second ConfigMap sets limit keys; the controller reads one")
    return (maps[0], maps[0].get(("data",))) if maps else (None, {})


def render_ingress(text: str) -> Rendered:
    """The file's Ingress limits rendered and read; a PeerError naming the line and YAML path of
    what changes the limit and cannot be read."""
    docs = documents(text, "ingress")
    ing = _limited(docs)
    ann_path: Path_ = ("metadata", "annotations")
    ann = {str(k).removeprefix(PREFIX): v for k, v in ing.get(ann_path).items() if str(k).startswith(PREFIX)}
    at = {name: (*ann_path, PREFIX + name) for name in ann}
    notes = [RETIRED]
    for name in sorted(n for n in ann if n.startswith("limit-") and n not in KNOWN):
        why = NOT_A_RATE.get(name, "not an ingress-nginx rate-limit annotation: the controller ignores it")
        notes.append(f"{_where(ing, at[name])}: {name} {why}; not modelled")
    rps, rpm, conn = (_int(ing, at[n], ann[n]) if n in ann else 0 for n in ("limit-rps", "limit-rpm", "limit-connections"))
    mult = _int(ing, at["limit-burst-multiplier"], ann["limit-burst-multiplier"]) if "limit-burst-multiplier" in ann \
        else DEFAULT_MULTIPLIER
    if rps == 0 and rpm == 0:
        where = _where(ing, at["limit-connections"]) if conn else _where(ing, ann_path)
        raise PeerError(f"{where}: no limit-rps or limit-rpm: nothing limits the request rate "
                        "(limit-connections limits concurrent connections)")
    cm, data = _configmap(docs)
    status = _int(cm, ("data", "limit-req-status-code"), data["limit-req-status-code"]) \
        if cm is not None and "limit-req-status-code" in data else DEFAULT_STATUS
    variable = str(data.get("limit-conn-zone-variable", "$binary_remote_addr"))
    meta = ing.get(("metadata",))
    zone = f"{meta.get('namespace') or 'default'}_{meta.get('name', '')}_{meta.get('uid', '')}"
    rid = base64.urlsafe_b64encode(zone.encode()).decode().replace("=", "")
    allow = str(ann.get("limit-allowlist", ann.get("limit-whitelist", "")))
    cidrs = [c.strip() for c in allow.split(",") if c.strip()]
    zones = sorted([f"limit_req_zone $limit_{rid} zone={zone}_rps:5m rate={rps}r/s;"] * bool(rps)
                   + [f"limit_req_zone $limit_{rid} zone={zone}_rpm:5m rate={rpm}r/m;"] * bool(rpm))
    uses = [f"limit_req zone={zone}_rps burst={rps * mult} nodelay;"] * bool(rps) \
        + [f"limit_req zone={zone}_rpm burst={rpm * mult} nodelay;"] * bool(rpm)
    geo = "".join(f" {c} 1;" for c in cidrs)
    nginx = "\n".join([
        f"# rendered by ratelimit-bench as ingress-nginx renders Ingress {zone}",
        f"limit_req_status {status};",
        f"geo $remote_addr $allowlist_{rid} {{ default 0;{geo} }}",
        f'map $allowlist_{rid} $limit_{rid} {{ 0 {variable}; 1 ""; }}',
        *zones,
        "server { location / {", *(f"    {u}" for u in uses), "} }", ""])
    if conn:
        notes.append(f"{_where(ing, at['limit-connections'])}: limit-connections {conn} renders limit_conn "
                     f"{zone}_conn {conn} (concurrent connections per address): not a rate, not modelled, not run live")
    if cidrs:
        notes.append(f"{_where(ing, at.get('limit-allowlist', at.get('limit-whitelist', ann_path)))}: requests from "
                     f"{', '.join(cidrs)} are never limited (empty key); the simulation and --traffic limit every address")
    if data.get("use-forwarded-headers") not in (None, "false", False):
        notes.append(f"{_where(cm, ('data', 'use-forwarded-headers'))}: the key is the address X-Forwarded-For names "
                     "(real_ip); the live run keys by the connection's address")
    try:
        read = read_nginx(nginx).config
    except PeerError as exc:
        raise PeerError(f"{_where(ing, ann_path)}: rendered as ingress-nginx does: {exc}") from None
    replicas = replicas_in(docs)
    findings = _findings(ing, at, cm, status, rps, rpm, mult, docs, replicas)
    config = replace(read, findings=findings, lints=LINTS, replicas=replicas, notes=notes + read.notes[-1:],
                     limits=[replace(lim, line=ing.line(at["limit-rps" if lim.name.endswith("_rps") else "limit-rpm"]))
                             for lim in read.limits])
    return Rendered(nginx, config, notes)


def _findings(ing: Document, at: dict[str, Path_], cm: Document | None, status: int, rps: int, rpm: int, mult: int,
              docs: list[Document], replicas: int | None) -> list[ConfigFinding]:
    """The pitfalls ingress-nginx users report most, named where they are fixed."""
    out = []
    if status != 429:
        where = _where(cm, ("data", "limit-req-status-code")) if cm is not None and status != DEFAULT_STATUS \
            else (_where(cm, ("data",)) if cm is not None else _where(ing, ("metadata", "annotations")))
        out.append(ConfigFinding("ingress_status_code", where, f"refusals are {status}"
                                 + (" (the controller's default)" if status == DEFAULT_STATUS else "")
                                 + ": clients and CDNs read them as an outage, not as 'slow down'",
                                 'the controller ConfigMap: data: {limit-req-status-code: "429"}'))
    if "limit-burst-multiplier" not in at:
        for name, n, unit in (("limit-rps", rps, "s"), ("limit-rpm", rpm, "min")):
            if n:
                out.append(ConfigFinding(
                    "ingress_burst_multiplier", _where(ing, at[name]),
                    f"{name}: {n} admits {n * mult + 1} at once per address (burst = {n} x limit-burst-multiplier "
                    f"{mult}, the default, + 1), not {n} per {unit}",
                    f'{PREFIX}limit-burst-multiplier: "1" (or the burst you mean, divided by the rate)'))
    if replicas is not None and replicas > 1:
        out.append(ConfigFinding("ingress_per_replica", _replicas_where(docs, replicas),
                                 f"{replicas} controller replicas each count their own: the fleet admits up to "
                                 f"{replicas}x the annotated rate per address (limits apply per replica)",
                                 "divide the annotated rate by the replicas, or limit behind a shared store"))
    return out


def _replicas_where(docs: list[Document], replicas: int) -> str:
    for d in docs:
        for path in (("spec", "maxReplicas"), ("spec", "replicas")):
            if isinstance(d.data, dict) and d.get(path) == replicas:
                return _where(d, path)
    return "the manifest"


class IngressNginx(Nginx):
    """ingress-nginx's annotations: NGINX ``limit_req`` as the controller renders it (modelled
    and run live as the ``nginx`` peer runs a user's file)."""

    name = system = "ingress-nginx"
    summary = ("kubernetes/ingress-nginx limit-rps/limit-rpm annotations rendered to NGINX limit_req (burst x5, 503, "
               "per controller replica); modelled by token_bucket; retired March 2026")

    def recognises(self, text: str) -> bool:
        return PREFIX + "limit-" in text

    def read_config(self, text: str, source: str = "config") -> PeerConfig:
        config = render_ingress(text).config
        self.modelled(config.limits)
        return config
