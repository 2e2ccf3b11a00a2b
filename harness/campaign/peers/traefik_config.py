"""A user's own Traefik configuration read for ``validate``: every ``rateLimit`` middleware with the
routers that use it, each field with the place it is set (``FILE:LINE (a.b.c)``), in any of the
forms Traefik takes it:

- a dynamic-config file, YAML or TOML (``http.middlewares.<name>.rateLimit``, routers in
  ``http.routers.<r>.middlewares``);
- Kubernetes CRDs (``kind: Middleware`` of ``traefik.io`` / ``traefik.containo.us``, its
  ``spec.rateLimit``; ``IngressRoute`` routes naming it), with the fleet a Deployment or HPA
  declares (manifest.py);
- labels (``traefik.http.middlewares.<name>.ratelimit.average=100``) on the services of a
  docker-compose file, as a list of ``k=v`` or a mapping.

Field names are matched without regard to case, as Traefik's own decoder does. The values are
Traefik's: ``average``/``burst`` int64, ``period`` a Go duration or whole seconds
(traefik/paerser types/duration.go); anything else, or a field this reader does not know, is a
PeerError naming where it is set: Traefik would not build that middleware as validate would model it.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from typing import Any

from .base import PeerError
from .manifest import Document, Path_, documents, replicas_in

KNOWN = ("average", "period", "burst", "sourcecriterion.ipstrategy", "sourcecriterion.ipstrategy.depth",
         "sourcecriterion.ipstrategy.excludedips", "sourcecriterion.ipstrategy.ipv6subnet",
         "sourcecriterion.requestheadername", "sourcecriterion.requesthost", "sourcecriterion")
"""The fields of Traefik 3.7's ``RateLimit`` (pkg/config/dynamic/middlewares.go:599-634) this reader
models; ``redis.*`` is read as a store the replicas share."""
CRD_GROUPS = ("traefik.io/", "traefik.containo.us/")
UNSUPPORTED = {"inflightreq": "limits concurrent requests, not a rate"}
"""Other middlewares that limit: refused (remove them or validate them apart), as NGINX's limit_conn."""


@dataclass(frozen=True)
class Setting:
    value: Any
    where: str


@dataclass
class Middleware:
    """One ``rateLimit`` middleware: its fields by lower-case dotted name, and who uses it."""

    name: str
    where: str
    line: int
    fields: dict[str, Setting] = field(default_factory=dict)
    routers: list[str] = field(default_factory=list)

    def get(self, name: str, default: Any = None) -> Any:
        found = self.fields.get(name)
        return default if found is None else found.value

    def at(self, name: str) -> str:
        """Where ``name`` is set, else where the middleware is."""
        found = self.fields.get(name)
        return self.where if found is None else found.where


@dataclass
class TraefikFile:
    middlewares: list[Middleware]
    replicas: int | None = None
    notes: list[str] = field(default_factory=list)


def _lower(data: Any) -> Any:
    return {str(k).lower(): v for k, v in data.items()} if isinstance(data, dict) else {}


def _key(data: dict, name: str) -> Any:
    """The key of ``data`` that is ``name`` without regard to case (None: absent)."""
    return next((k for k in data if str(k).lower() == name), None) if isinstance(data, dict) else None


def _flatten(value: Any, prefix: str, path: Path_, out: dict[str, tuple[Any, Path_]]) -> None:
    if isinstance(value, dict) and value:
        for k, v in value.items():
            _flatten(v, f"{prefix}.{str(k).lower()}" if prefix else str(k).lower(), (*path, k), out)
    else:
        out[prefix] = (value, path)


def _from_tree(doc: Document, source: str, http: Path_, kind: str) -> list[Middleware]:
    """Middlewares and routers under ``http`` (a dynamic config's ``http`` table)."""
    root = doc.get(http) or {}
    mws_key, routers_key = _key(root, "middlewares"), _key(root, "routers")
    found: dict[str, Middleware] = {}
    for name, body in (root.get(mws_key) or {}).items() if mws_key else ():
        path = (*http, mws_key, name)
        _refuse_unsupported(body, doc, source, path)
        rl = _key(body, "ratelimit")
        if rl is None:
            continue
        flat: dict[str, tuple[Any, Path_]] = {}
        _flatten(body[rl] or {}, "", (*path, rl), flat)
        found[name] = Middleware(name, doc.where(source, (*path, rl)), doc.line((*path, rl)),
                                 {k: Setting(v, doc.where(source, p)) for k, (v, p) in flat.items() if k})
    for router, body in (root.get(routers_key) or {}).items() if routers_key else ():
        used = body.get(_key(body, "middlewares")) if isinstance(body, dict) else None
        for ref in used or []:
            if (mw := found.get(str(ref).split("@")[0])) is not None:
                mw.routers.append(f"{kind}{router}")
    return list(found.values())


def _refuse_unsupported(body: Any, doc: Document, source: str, path: Path_) -> None:
    for k in body if isinstance(body, dict) else ():
        if str(k).lower() in UNSUPPORTED:
            raise PeerError(f"{doc.where(source, (*path, k))}: {k} {UNSUPPORTED[str(k).lower()]}: validate models rateLimit only "
                            "(remove it or validate it apart)")


def _from_crds(docs: list[Document], source: str) -> list[Middleware]:
    found: dict[str, Middleware] = {}
    for doc in docs:
        d = doc.data if isinstance(doc.data, dict) else {}
        if d.get("kind") != "Middleware" or not str(d.get("apiVersion", "")).startswith(CRD_GROUPS):
            continue
        name, spec = str(doc.get(("metadata", "name"), "")), doc.get(("spec",)) or {}
        _refuse_unsupported(spec, doc, source, ("spec",))
        rl = _key(spec, "ratelimit")
        if rl is None:
            continue
        flat: dict[str, tuple[Any, Path_]] = {}
        _flatten(spec[rl] or {}, "", ("spec", rl), flat)
        found[name] = Middleware(name, doc.where(source, ("spec", rl)), doc.line(("spec", rl)),
                                 {k: Setting(v, doc.where(source, p)) for k, (v, p) in flat.items() if k})
    for doc in docs:
        d = doc.data if isinstance(doc.data, dict) else {}
        if d.get("kind") not in ("IngressRoute",):
            continue
        for i, route in enumerate(doc.get(("spec", "routes")) or []):
            for ref in (route or {}).get("middlewares") or []:
                if isinstance(ref, dict) and (mw := found.get(str(ref.get("name")))) is not None:
                    mw.routers.append(f"{doc.get(('metadata', 'name'))}.routes[{i}]")
    return list(found.values())


_LABEL = re.compile(r"^traefik\.http\.(middlewares|routers)\.([^.]+)\.(.+)$", re.IGNORECASE)


def _labels(doc: Document) -> list[tuple[str, str, Path_]]:
    """(label, value, path) of every label on the services of a compose file."""
    out = []
    services = doc.get(("services",))
    for svc in services if isinstance(services, dict) else ():
        for base in (("services", svc, "labels"), ("services", svc, "deploy", "labels")):
            labels = doc.get(base)
            if isinstance(labels, dict):
                out += [(str(k), str(v), (*base, k)) for k, v in labels.items()]
            elif isinstance(labels, list):
                out += [(*str(item).split("=", 1), (*base, i)) for i, item in enumerate(labels) if "=" in str(item)]
    return out


def _from_labels(doc: Document, source: str) -> list[Middleware]:
    found: dict[str, Middleware] = {}
    routers: list[tuple[str, str]] = []
    for label, value, path in _labels(doc):
        m = _LABEL.match(label.strip())
        if m is None:
            continue
        kind, name, rest = m[1].lower(), m[2], m[3].lower()
        where = f"{doc.where(source, path)} label {label.strip()}"
        if kind == "routers":
            if rest == "middlewares":
                routers += [(name, ref.strip().split("@")[0]) for ref in value.split(",")]
            continue
        if rest.split(".")[0] in UNSUPPORTED:
            raise PeerError(f"{where}: {rest.split('.')[0]} {UNSUPPORTED[rest.split('.')[0]]}: validate models "
                            "rateLimit only (remove it or validate it apart)")
        if rest == "ratelimit" or rest.startswith("ratelimit."):
            mw = found.setdefault(name, Middleware(name, where, doc.line(path)))
            mw.fields[rest.removeprefix("ratelimit").lstrip(".")] = Setting(value.strip(), where)
    for router, ref in routers:
        if ref in found:
            found[ref].routers.append(f"router {router}")
    for mw in found.values():
        mw.fields.pop("", None)
    return list(found.values())


def toml_document(text: str, source: str) -> Document:
    """A TOML file as a Document: tomllib's values, and the line of each table header and
    ``key =`` line by its path (inline tables: their key's line, by the nearest ancestor)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PeerError(f"{source}: not valid TOML ({exc})") from None
    lines: dict[Path_, int] = {(): 1}
    table: Path_ = ()
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if m := re.fullmatch(r"\[\[?\s*([^\]]+?)\s*\]\]?", line):
            table = _toml_key(m[1])
            lines.setdefault(table, n)
        elif m := re.match(r"([A-Za-z0-9_.\"' -]+?)\s*=", line):
            lines.setdefault((*table, *_toml_key(m[1])), n)
    return Document(data, lines)


def _toml_key(text: str) -> Path_:
    return tuple(part.strip().strip("\"'") for part in re.findall(r'"[^"]*"|\'[^\']*\'|[^.]+', text))


def read_traefik(text: str, source: str) -> TraefikFile:
    """Every rateLimit middleware of the file, whatever its form; a PeerError when none."""
    stripped = text.lstrip()
    if stripped.startswith("[") or re.search(r"^\s*\[\s*http\b", text, re.MULTILINE):
        docs = [toml_document(text, source)]
    else:
        docs = documents(text, source)
    found: list[Middleware] = []
    for doc in docs:
        if isinstance(doc.data, dict) and (http := _key(doc.data, "http")) is not None:
            found += _from_tree(doc, source, (http,), "router ")
        if isinstance(doc.data, dict) and "services" in doc.data:
            found += _from_labels(doc, source)
    found += _from_crds(docs, source)
    if not found:
        raise PeerError(f"{source}: no rateLimit middleware: nothing in the file limits requests")
    return TraefikFile(found, replicas_in(docs) or _compose_replicas(docs))


def _compose_replicas(docs: list[Document]) -> int | None:
    """A compose file's Traefik service's ``deploy.replicas``."""
    for doc in docs:
        services = doc.get(("services",))
        for body in services.values() if isinstance(services, dict) else ():
            if isinstance(body, dict) and str(body.get("image", "")).startswith(("traefik", "docker.io/traefik")):
                n = (body.get("deploy") or {}).get("replicas")
                if isinstance(n, int):
                    return n
    return None

