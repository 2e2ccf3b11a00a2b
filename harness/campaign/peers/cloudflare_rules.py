"""Cloudflare rate limiting rules as users ship them: the Rulesets API's JSON (a ruleset, an API
answer's ``result`` or a bare list of rules) with the line of every value, or Terraform's
``cloudflare_ruleset`` (HCL through python-hcl2, named by its path: HCL keeps no lines here).
Every rule with a ``ratelimit`` is one ``Rule``; a field of it that validate does not know changes
the limit, so it is bad input naming its path.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import hcl2

from .base import PeerError
from .manifest import Document, Path_, documents, dotted

KNOWN = {"characteristics", "period", "requests_per_period", "mitigation_timeout", "counting_expression",
         "requests_to_origin"}


@dataclass(frozen=True)
class Rule:
    """One rule's ``ratelimit`` and where each of its fields sits."""

    name: str
    action: str
    fields: dict[str, Any]
    where: dict[str, str]
    """``FILE:LINE (path)`` or ``FILE: path`` of each field, and of the ratelimit itself (``""``)."""


def _unquote(value: Any) -> Any:
    """python-hcl2 keeps a string's quotes; the values as Terraform reads them."""
    if isinstance(value, str) and len(value) > 1 and value[0] == value[-1] == '"':
        return json.loads(value)
    if isinstance(value, list):
        return [_unquote(v) for v in value]
    if isinstance(value, dict):
        return {_unquote(k): _unquote(v) for k, v in value.items() if k != "__is_block__"}
    return value


def _terraform(text: str, source: str) -> list[tuple[Path_, list[Any], Document | None]]:
    try:
        tf = _unquote(hcl2.loads(text))
    except Exception as exc:  # python-hcl2 raises lark's errors, with the position in the text
        raise PeerError(f"{source}: not valid HCL ({str(exc).splitlines()[0]})") from None
    out = []
    for block in tf.get("resource", []):
        for name, body in block.get("cloudflare_ruleset", {}).items():
            rules = body.get("rules", [])
            out.append((("resource", "cloudflare_ruleset", name, "rules"), rules if isinstance(rules, list) else [rules], None))
    return out


def _json(text: str, source: str) -> list[tuple[Path_, list[Any], Document | None]]:
    out = []
    for doc in documents(text, source):
        data = doc.data
        path: Path_ = ()
        if isinstance(data, dict) and isinstance(data.get("result"), dict):
            data, path = data["result"], ("result",)
        rules = data.get("rules") if isinstance(data, dict) else data
        if isinstance(rules, list):
            out.append(((*path, "rules") if isinstance(data, dict) else path, rules, doc))
    return out


def _where(doc: Document | None, source: str, path: Path_) -> str:
    """``FILE:LINE (path)`` in JSON, ``FILE: path`` in HCL (no lines)."""
    return doc.where(source, path) if doc is not None else f"{source}: {dotted(path)}"


def read_rules(text: str, source: str) -> list[Rule]:
    """Every rate limiting rule of the file, in its order."""
    terraform = "cloudflare_ruleset" in text and text.lstrip()[:1] not in "{["
    found = []
    for base, rules, doc in (_terraform if terraform else _json)(text, source):
        for i, rule in enumerate(rules):
            rl = rule.get("ratelimit") if isinstance(rule, dict) else None
            rl = rl[0] if isinstance(rl, list) and rl else rl
            if not isinstance(rl, dict):
                continue
            at = (*base, i, "ratelimit")
            for key in rl:
                if key not in KNOWN:
                    raise PeerError(f"{_where(doc, source, (*at, key))}: {key}: not a ratelimit field validate knows "
                                    f"({', '.join(sorted(KNOWN))}); it changes what is counted")
            name = str(rule.get("description") or rule.get("ref") or f"rule {i}")
            found.append(Rule(name, str(rule.get("action", "block")), rl,
                              {"": _where(doc, source, at), **{k: _where(doc, source, (*at, k)) for k in rl}}))
    return found
