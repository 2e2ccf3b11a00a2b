"""Credentials out of everything the suite prints or writes: a Redis URL's password (in its
user part or a ``password=`` query field) becomes ``***`` in messages, logs, run.json and
campaign.yaml, while host, port and database stay readable for whoever debugs a run."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

HIDDEN = "***"
_USERINFO = re.compile(r"(//[^/@]*?:)[^/@]*@")
_SECRET_FIELDS = {"password", "pass", "pwd", "token", "secret"}


def redact_url(url: str) -> str:
    """``redis://user:secret@host:6379/0?password=x`` -> ``redis://user:***@host:6379/0?password=***``."""
    try:
        parts = urlsplit(url)
    except ValueError:  # not even a URL: hide anything between // and @
        return _USERINFO.sub(rf"\g<1>{HIDDEN}@", url)
    out = url
    if "@" in parts.netloc:
        user, _, host = parts.netloc.rpartition("@")
        name, colon, _ = user.partition(":")
        out = out.replace(parts.netloc, f"{name}:{HIDDEN}@{host}" if colon else f"{HIDDEN}@{host}", 1)
    if parts.query:
        fields = parse_qsl(parts.query, keep_blank_values=True)
        query = urlencode([(k, HIDDEN if k.lower() in _SECRET_FIELDS else v) for k, v in fields], safe="*")
        out = out.replace(f"?{parts.query}", f"?{query}", 1)
    return out


def redacted(tree: Any) -> Any:
    """A copy of a config tree (mappings, lists) with every ``url`` value redacted."""
    if isinstance(tree, dict):
        return {k: redact_url(v) if k == "url" and isinstance(v, str) else redacted(v) for k, v in tree.items()}
    if isinstance(tree, list):
        return [redacted(v) for v in tree]
    return tree
