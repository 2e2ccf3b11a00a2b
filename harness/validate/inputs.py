"""validate's other inputs: a peer's own config file (an NGINX file's ``limit_req`` lines, ...) or
a URL with the policy it claims to enforce. A config file becomes the policy file the lints and
simulated checks judge: each of its limits as the peer's mapped model (harness/campaign/peers),
its 429's headers as the file sets them, the traffic and thresholds of an optional policy file.
Pure but for the URL's reachability: nothing starts here.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from contract.urls import check_http_url
from harness.campaign.config_file import CampaignError
from harness.campaign.peers import ConfigFinding, Peer, PeerConfig, PeerError
from harness.campaign.policy_file import Limit, PolicyFile, PolicyKeys, Response, parse_policy

from .checks import CheckVerdict
from .lints import lint_verdict

DEFAULT_ROUTE = "GET /api/items"
"""The route a config file's limits cover when no policy file names the service's routes."""


def read_config(spec: Peer, text: str, path: Path) -> PeerConfig:
    """The file's limits and 429 as the peer reads them, then parsed by the product itself where it
    can be (``parse_check``: a lint row, its words a note); its errors, and findings a reader names
    by ``line N (a.b)``, prefixed with the file's name."""
    try:
        config = spec.read_config(text, str(path))
        said = spec.parse_check(text)
    except PeerError as exc:
        message = str(exc)
        raise PeerError(message if message.startswith(f"{path}:") else f"{path}: {message}") from None
    named = [replace(f, where=f"{path}:{f.where.removeprefix('line ')}") if f.where.startswith("line ") else f
             for f in config.findings]
    notes = [f"{path}:{n.removeprefix('line ')}" if re.match(r"line \d", n) else n for n in config.notes]
    if said is not None:
        return replace(config, findings=named, lints=(f"{spec.system}_parses", *config.lints), notes=[said, *notes])
    return replace(config, findings=named, notes=notes)


def fleet_size(config: PeerConfig, replicas: int | None) -> int:
    """The replicas the file's limits run on: ``--replicas``, else what the file declares, else 1."""
    return replicas or config.replicas or 1


def policy_of_config(spec: Peer, config: PeerConfig, base: PolicyFile | None, source: Path,
                     replicas: int | None = None) -> PolicyFile:
    """The policy file that stands for the peer's file: its limits as their mapped models, on the
    fleet it runs on. Every replica keeps its own counters unless the file shares them (scope
    ``fleet``), so N replicas are N local nodes each enforcing the whole stated limit: the lint
    and the simulated over-admission of a local limit not divided then say what the fleet admits."""
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", source.stem) or "peer-config"
    limits = []
    for lim in config.limits:
        algorithm, mapped = (lim.algorithm, lim.policy) if lim.algorithm else spec.model(lim.policy)
        limits.append(Limit.model_validate({"name": re.sub(r"[^A-Za-z0-9_-]+", "-", lim.name).strip("-"), "key": lim.key,
                                            "algorithm": algorithm, "limit": mapped.limit, "window_s": mapped.window_s,
                                            "burst": mapped.burst, "params": lim.params}))
    keys = base.keys if base else PolicyKeys()
    if config.ipv6_prefix is not None:
        keys = keys.model_copy(update={"ipv6_prefix": config.ipv6_prefix})
    if config.trusted_proxies is not None:
        keys = keys.model_copy(update={"behind_proxies": True, "trusted_proxies": config.trusted_proxies})
    raw = {**(base.model_dump(mode="json") if base else {"name": name, "routes": [{"name": DEFAULT_ROUTE}]}),
           "limits": [lim.model_dump(mode="json") for lim in limits], "keys": keys.model_dump(mode="json"),
           "response": Response(retry_after=config.retry_after, cache_control=config.cache_control).model_dump(mode="json"),
           "store": {"backend": "memory", "divide_by_nodes": False}, "nodes": _nodes(config, replicas)}
    raw["thresholds"] = [str(t) for t in base.thresholds] if base else []
    return parse_policy(raw, str(source))


def _nodes(config: PeerConfig, replicas: int | None) -> int:
    shared = all(lim.scope == "fleet" for lim in config.limits)
    return 1 if shared else fleet_size(config, replicas)


def fleet_notes(config: PeerConfig, replicas: int | None) -> list[str]:
    """The limit the fleet enforces beside the one the file states, for each limit."""
    n = fleet_size(config, replicas)
    if n < 2:
        return []
    out = []
    for lim in config.limits:
        p = lim.policy
        if lim.scope == "fleet":
            out.append(f"{lim.name}: {n} replicas share one counter: the fleet enforces the stated {p.limit:g} per {p.window_s:g} s")
        else:
            out.append(f"{lim.name}: {n} replicas each count their own ({lim.scope}): the fleet enforces up to "
                       f"{n * p.limit:g} per {p.window_s:g} s where the file states {p.limit:g}")
    return out


def config_lints(spec: Peer, config: PeerConfig) -> list[CheckVerdict]:
    """The lints of the file itself: its refusal status, then every lint the product's reader ran,
    a row each, its findings named where the user fixes them, in the product's own words."""
    rows = [reject_status(spec, config)]
    by_lint: dict[str, list[ConfigFinding]] = {name: [] for name in config.lints}
    for f in config.findings:
        by_lint.setdefault(f.lint, []).append(f)
    for name, found in by_lint.items():
        rows.append(lint_verdict(name, f"no {name.replace('_', ' ')} pitfall", [
            (f"{f.where}: {f.problem}", f.fix) for f in found]))
    return rows


def reject_status(spec: Peer, config: PeerConfig) -> CheckVerdict:
    """A lint of the file itself: a refusal is a 429 (NGINX without limit_req_status sends 503)."""
    if config.reject_status == 429:
        return lint_verdict("reject_status_429", "refusals are 429 Too Many Requests", [])
    fix = {"nginx": "limit_req_status 429; (beside limit_req)",
           "ingress-nginx": 'the controller ConfigMap: data: {limit-req-status-code: "429"}',
           "haproxy": "http-request deny deny_status 429 if ... (a deny answers 403 without deny_status)",
           }.get(spec.system, "answer refusals with 429")
    return lint_verdict("reject_status_429", "", [
        (f"refusals are {config.reject_status}, not 429: clients, retries and CDNs read them as an outage", fix)])


def check_url(url: str) -> str:
    """The URL as given, once it is an http(s) URL. Whether it answers is the measuring session's
    first request (``reach``, on a key of its own: harness/validate/measured.py), not a request
    here that would spend a key's quota unseen."""
    return check_http_url(url, "--url", CampaignError)
