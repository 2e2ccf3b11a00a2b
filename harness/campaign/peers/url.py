"""The ``url`` peer: any HTTP endpoint the user already runs (their gateway, or a suite target
started on another machine with ``python -m targets``), named in a campaign as
``{name: my-gateway, url: "http://127.0.0.1:8080"}``.

The suite starts nothing for it and reads none of its records: its decisions are inferred from
the client log (a status in ``reject_status`` is a refusal, the time is the client's send time),
so every metric of its runs is client-side, uncertain by the request's round trip. It has a
mapped model (the virtual twin) only when the user states the algorithm it claims to enforce.
"""

from __future__ import annotations

import httpx
from pydantic import Field, field_validator

from contract.urls import check_http_url
from scenarios.addresses import WARM_UP_ADDRESS, on_loopback
from targets.algorithms import PEER_MODELS, Policy

from ..config_file import StrictModel, check_algorithms
from .base import Peer, PeerError

SYSTEM = "url"
STORE = "external"
"""The store its runs name: its state is wherever the user's endpoint keeps it."""
REACH_TIMEOUT_S = 3.0
URL_ITEM = "{name: ..., url: ...}"
KEY_PATTERN = r"^(ip|header:[A-Za-z0-9!#$%&'*+.^_`|~-]+)$"
"""``ip`` or ``header:NAME`` (NAME an HTTP field name)."""
URL_SUMMARY = ("any HTTP endpoint you already run (reject_status: [429], key: ip | header:NAME, optional claims: "
               "{algorithm, limit, window_s, burst}); nothing started, judged client-side from the client log")
"""How ``run_bench.py list`` names it."""


class Claims(StrictModel):
    """What the endpoint claims to enforce; unset fields are the campaign's policy."""

    algorithm: str
    limit: float | None = Field(default=None, gt=0)
    window_s: float | None = Field(default=None, gt=0)
    burst: float | None = Field(default=None, gt=0)

    @field_validator("algorithm")
    @classmethod
    def _known(cls, value: str) -> str:
        """A suite algorithm or a peer model (limits' first-hit window, HAProxy's counter): an
        endpoint may run either, and the twin replays both."""
        check_algorithms([value], all_allowed=False, also=PEER_MODELS)
        return value


class UrlPeerEntry(StrictModel):
    """A campaign's ``peers:`` item for an endpoint of the user's."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9.-]*$", max_length=64)
    """Its runs are ``<scenario>__<name>``: letters, digits, dots and dashes."""
    url: str = Field(max_length=2000)
    reject_status: list[int] = Field(default_factory=lambda: [429], min_length=1)
    """The statuses that mean "refused by the limiter"."""
    key: str | None = Field(default=None, pattern=KEY_PATTERN, max_length=80)
    """What its limiter counts by: ``ip`` (each client sends from its own loopback address) or
    ``header:NAME`` (that header's value: the scenario's ``x-api-key``, or a header it sends);
    unset: as the suite's targets count (the API key, else the address). Every metric of its runs
    is per this key."""
    claims: Claims | None = None

    @field_validator("url")
    @classmethod
    def _usable(cls, value: str) -> str:
        """http(s), a port within 1..65535, no space or CR/LF: said as such, not as "unreachable"."""
        return check_http_url(value, "url")


class UrlPeer(Peer):
    system = SYSTEM
    store = STORE

    def __init__(self, entry: UrlPeerEntry) -> None:
        self.entry = entry
        self.name, self.url = entry.name, entry.url.rstrip("/")
        claimed = f"; claims {entry.claims.algorithm}" if entry.claims else "; no mapped model"
        keyed = f"; keyed by {entry.key}" if entry.key else ""
        self.summary = (f"{self.url}, judged client-side (refused: {', '.join(map(str, entry.reject_status))})"
                        f"{keyed}{claimed}")

    def model(self, policy: Policy) -> tuple[str, Policy]:
        """The algorithm it claims, under the policy it claims (the campaign's where it says nothing)."""
        claims = self.entry.claims
        if claims is None:
            raise PeerError(f"peer {self.name}: no mapped model; state the algorithm it claims "
                            "(claims: {algorithm: ..., limit: ..., window_s: ..., burst: ...})")
        return claims.algorithm, Policy(claims.limit or policy.limit, claims.window_s or policy.window_s,
                                        claims.burst if claims.burst is not None else policy.burst)

    def twin(self, policy: Policy) -> tuple[str, Policy] | None:
        return self.model(policy) if self.entry.claims else None

    def check(self, policy: Policy, costs: list[float]) -> None:
        """Nothing to refuse: it enforces whatever it enforces, and the suite judges that."""
        if self.entry.claims:
            self.model(policy)

    def preflight(self) -> None:
        """It answers: any HTTP answer will do; no answer is a PeerError naming the URL."""
        try:
            reach(self.url)
        except httpx.HTTPError as exc:
            raise PeerError(f"peer {self.name}: {self.url} is unreachable ({type(exc).__name__}: {exc})") from None


def reach(url: str) -> None:
    """One GET of ``url``, from the warm-up's own address (never a tested client's): any HTTP
    answer will do; no answer raises httpx's error."""
    transport = httpx.HTTPTransport(local_address=WARM_UP_ADDRESS) if on_loopback(url) else None
    with httpx.Client(timeout=REACH_TIMEOUT_S, transport=transport) as client:
        client.get(url)
