"""A peer running the user's own config file: ``validate --config FILE`` reads it (the product
recognised from the file or named, its limits as the product's reader finds them), and a live
campaign's ``peers:`` item ``{name: nginx, config: nginx.conf}`` runs it in the real binary beside
the suite's targets, judged against the file's own first limit: the campaign refuses a scenario
whose policy is not that limit (harness/campaign/live.py), so its runs share one traffic and one oracle.

The one place a user's product file is read into a peer: ``read_product_file`` (its NGINX
includes too) and ``which_peer`` serve validate and campaigns alike; the live side renders it
with the product's ``from_config`` (harness/live/peers/).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, PrivateAttr, ValidationInfo, field_validator, model_validator

from contract.errors import BadInput
from contract.paths import read_input
from targets.algorithms import Policy

from ..config_file import StrictModel
from . import PEERS, peer
from .base import Peer, PeerConfig, PeerError
from .modelled import ModelledPeer
from .nginx_config import with_includes

CONFIG_ITEM = "{name: ..., config: FILE}"
CONFIG_SUMMARY = ("a peer above that runs here (nginx, haproxy, traefik, envoy, ingress-nginx) with your own config "
                  "file, its limit lines as written; the campaign's policy must be the file's first limit (path relative "
                  "to the campaign)")
"""How ``run_bench.py list`` names the form."""


def which_peer(text: str, named: str | None, source: str) -> Peer:
    """``named`` when given (an unknown one named with the known ones), else the one peer whose
    config language the file is in."""
    if named is not None:
        return peer(named)
    found = [p for p in PEERS.values() if p.recognises(text)]
    if not found:
        raise PeerError(f"{source}: not a config file of a known peer; name its peer with --peer ({', '.join(PEERS)})")
    return found[0]


def read_product_file(path: Path, named: str | None, what: str) -> tuple[str, Peer]:
    """A product's file as the user wrote it (an NGINX file with its includes), and its peer:
    ``named``, else recognised from the file. ``what``: the flag or field the path came from."""
    text = read_input(path, what)
    if named is None or named.startswith("nginx"):
        text = with_includes(text, path)
    return text, which_peer(text, named, str(path))


def check_runs_files(spec: Peer) -> None:
    """A PeerError, one line, unless ``spec`` can run a user's file here."""
    if isinstance(spec, ModelledPeer):
        raise PeerError(f"{spec.name} is modelled, not run here ({spec.why_not_run}); validate --config FILE judges its "
                        "file by the model")
    if not spec.runs_files:
        runnable = ", ".join(n for n, p in PEERS.items() if p.runs_files)
        raise PeerError(f"{spec.name} runs only as the campaign's policy configures it; a file of yours runs in: {runnable}")


def read_limits(path: Path, name: str) -> tuple[Peer, str, PeerConfig]:
    """The product ``name``, the file's text and what its reader finds in it; a PeerError when it
    finds no limit."""
    text, spec = read_product_file(path, name, "")
    config = spec.read_config(text, str(path))
    if not config.limits:
        raise PeerError(f"{path}: no limit in the file")
    return spec, text, config


class ConfigPeerEntry(StrictModel):
    """A campaign's ``peers:`` item for a product of the suite's running the user's own file."""

    name: str = Field(max_length=64)
    """The product (``nginx``, ``haproxy``, ``traefik``, ``envoy``, ``ingress-nginx``): its runs are ``<scenario>__<name>``."""
    config: Path
    """The file, relative to the campaign file (the current folder when the campaign is not read from a file)."""
    _peer: ConfigPeer | None = PrivateAttr(default=None)

    @field_validator("name")
    @classmethod
    def _runs_here(cls, value: str) -> str:
        try:
            check_runs_files(peer(value))
        except PeerError as exc:
            raise ValueError(str(exc)) from None
        return value

    @field_validator("config")
    @classmethod
    def _readable(cls, value: Path, info: ValidationInfo) -> Path:
        """Resolved from the campaign's folder, then read as validate reads it: a missing file, a
        file of another product or one without a limit is an error naming the file."""
        base = (info.context or {}).get("base")
        path = value if value.is_absolute() else (Path(base or ".") / value).resolve()
        if "name" in info.data:  # else the name's own error is the one said
            try:
                read_limits(path, info.data["name"])
            except BadInput as exc:
                raise ValueError(str(exc) if str(exc).startswith(str(path)) else f"{path}: {exc}") from None
        return path

    @model_validator(mode="after")
    def _peer_built(self) -> ConfigPeerEntry:
        self._peer = ConfigPeer(self, *read_limits(self.config, self.name))
        return self

    @property
    def peer(self) -> ConfigPeer:
        assert self._peer is not None
        return self._peer


class ConfigPeer(Peer):
    """The product ``base`` running the user's file: its binary, store and system; its policy the
    file's first limit (``own_policy``), its model the product's mapped one under that limit."""

    def __init__(self, entry: ConfigPeerEntry, base: Peer, text: str, config: PeerConfig) -> None:
        self.entry, self.base, self.text, self.config = entry, base, text, config
        self.name, self.system, self.store = entry.name, base.system, base.store
        self.binary, self.package, self.wheel = base.binary, base.package, base.wheel
        self.uses_redis, self.start_s = base.uses_redis, base.start_s
        self.first = config.limits[0]
        p = self.first.policy
        self.summary = f"{base.system} running {entry.config} ({self.first.name}: {p.limit:g} per {p.window_s:g} s)"

    def own_policy(self) -> Policy:
        return self.first.policy

    def model(self, policy: Policy) -> tuple[str, Policy]:
        """The product's mapped model of the limit (the reader's own where it chose one)."""
        return (self.first.algorithm, policy) if self.first.algorithm else self.base.model(policy)

    def check(self, policy: Policy, costs: list[float]) -> None:
        self.base.check(policy, costs)

    def preflight(self) -> None:
        """Its binary on PATH, then the file parsed by the product itself where it can be (``nginx -t``)."""
        self.base.preflight()
        try:
            self.base.parse_check(self.text)
        except PeerError as exc:
            raise PeerError(f"peer {self.name}: {self.entry.config}: {exc}") from None

    def recorded(self) -> dict[str, Any]:
        """run.json's ``peer_config``: the file and the limit of it the run is judged by."""
        p = self.first.policy
        return {"path": str(self.entry.config), "peer": self.base.name, "limit_name": self.first.name,
                "line": self.first.line or None, "limit": p.limit, "window_s": p.window_s, "burst": p.burst}
