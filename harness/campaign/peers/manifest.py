"""YAML config files as products ship them (Traefik dynamic config, Envoy bootstrap, Istio
``EnvoyFilter``, Kubernetes manifests, Kong declarative config): every document of a multi-document
file read by PyYAML's safe loader, with the line each value sits on, so a lint names
``FILE:LINE (a.b[0].c)`` where the user fixes it, and the fleet a manifest declares.

PyYAML's composer keeps each node's position; its constructor drops it. The walk below builds the
plain values from the composed nodes and keeps a path -> line map beside them (no well-kept
library returns both for the safe loader's types).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from .base import PeerError

Path_ = tuple[str | int, ...]


def dotted(path: Path_) -> str:
    """``("spec", "http", 0, "name")`` -> ``spec.http[0].name``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


@dataclass
class Document:
    """One YAML document: its values, and the 1-based line of every value by its path."""

    data: Any
    lines: dict[Path_, int] = field(default_factory=dict)

    def line(self, path: Path_) -> int:
        """The line of ``path``, else of its nearest ancestor that has one (0: unknown)."""
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get((), 0)

    def where(self, source: str, path: Path_) -> str:
        """``FILE:LINE (a.b[0].c)``: where a finding at ``path`` is fixed."""
        return f"{source}:{self.line(path)} ({dotted(path)})" if path else f"{source}:{self.line(path)}"

    def get(self, path: Path_, default: Any = None) -> Any:
        """The value at ``path``, or ``default`` where any step is missing."""
        node = self.data
        for part in path:
            try:
                node = node[part]
            except (KeyError, IndexError, TypeError):
                return default
        return node


def documents(text: str, source: str, short_forms: bool = False) -> list[Document]:
    """Every non-empty document of ``text``; a YAML error is one PeerError naming the line.
    ``short_forms``: CloudFormation's tags (``!Ref X``, ``!Sub ...``) read as the long forms they
    stand for (``{"Ref": "X"}``, ``{"Fn::Sub": ...}``), which the safe loader otherwise refuses."""
    try:
        nodes = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        raise PeerError(f"{where}: not valid YAML ({getattr(exc, 'problem', None) or exc})") from None
    out = []
    for node in nodes:
        if node is None:
            continue
        doc = Document(None)
        doc.data = _value(node, (), doc.lines, short_forms=short_forms)
        if doc.data is not None:  # a document of comments only
            out.append(doc)
    return out


_PLAIN = {yaml.ScalarNode: "tag:yaml.org,2002:str", yaml.SequenceNode: "tag:yaml.org,2002:seq",
          yaml.MappingNode: "tag:yaml.org,2002:map"}


def _value(node: yaml.Node, path: Path_, lines: dict[Path_, int], line: int | None = None,
           short_forms: bool = False) -> Any:
    """The plain value of ``node``; a mapping's value is on its key's line (a block value starts below it)."""
    lines[path] = line or node.start_mark.line + 1
    if short_forms and node.tag.startswith("!"):
        name = "Ref" if node.tag == "!Ref" else f"Fn::{node.tag[1:]}"
        plain = type(node)(_PLAIN[type(node)], node.value, node.start_mark, node.end_mark)
        return {name: _value(plain, (*path, name), lines, lines[path], short_forms)}
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise PeerError(f"line {key_node.start_mark.line + 1}: YAML merge keys (<<) are not read; write the values out")
            key = _loader().construct_object(key_node)
            out[key] = _value(value_node, (*path, key), lines, key_node.start_mark.line + 1, short_forms)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_value(item, (*path, i), lines, short_forms=short_forms) for i, item in enumerate(node.value)]
    return _loader().construct_object(node)


def _loader() -> yaml.SafeLoader:
    return yaml.SafeLoader("")


def replicas_in(docs: list[Document]) -> int | None:
    """The most replicas the manifest lets run: an HPA's ``maxReplicas``, else a Deployment's or
    StatefulSet's ``replicas`` (None: the file declares none)."""
    hpa = [d.get(("spec", "maxReplicas")) for d in docs if isinstance(d.data, dict) and d.data.get("kind") == "HorizontalPodAutoscaler"]
    if found := [n for n in hpa if isinstance(n, int)]:
        return max(found)
    kinds = ("Deployment", "StatefulSet", "ReplicaSet")
    fixed = [d.get(("spec", "replicas")) for d in docs if isinstance(d.data, dict) and d.data.get("kind") in kinds]
    return max((n for n in fixed if isinstance(n, int)), default=None)
