"""`run_bench.py validate POLICY [--live]`: a pre-rollout gate for a rate limit policy file.

Lints the file for known pitfalls, replays the policy in virtual time with its own traffic
expectations and, with ``--live``, over HTTP against a real target, and checks the thresholds;
exit 0 pass, 1 fail, 2 invalid policy, 130 interrupted. ``--config FILE`` judges a peer's own
config file instead (an NGINX file's limit_req lines) through the peer's mapped model, ``--url``
a running endpoint by the policy it claims (harness/validate/inputs.py, peer_live.py).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from contract.atomic import write_text
from contract.paths import check_output
from contract.schema import JUDGE_LOG
from harness.campaign.config_file import CampaignError, check_out
from harness.campaign.key_classes import load_classes
from harness.campaign.log_traffic import LogTraffic, load_traffic
from harness.campaign.peers import Peer, PeerConfig, PeerError
from harness.campaign.peers.own_file import read_product_file
from harness.campaign.policy_file import PolicyFile, load_policy
from harness.judge.endpoint import JudgeError, KeySpec
from harness.live.peers import ProcessPeer, live_peer
from harness.live.supervise import Interrupted, RunFailed
from harness.validate.approximate import labelled
from harness.validate.checks import CheckVerdict, run_checks
from harness.validate.inputs import check_url, config_lints, fleet_notes, policy_of_config, read_config
from harness.validate.latency import run_latency_checks
from harness.validate.lints import run_lints
from harness.validate.live import LiveOutcome, run_live
from harness.validate.live_checks import live_verdicts
from harness.validate.measured import Caps, key_spec, url_verdicts
from harness.validate.peer_live import peer_verdicts
from harness.validate.report import suggestions, to_json, to_junit, verdict_table
from harness.validate.traffic import judge
from harness.validate.traffic_report import (
    class_table,
    detail_tables,
    notes,
    summary_table,
    to_html,
    traffic_facts,
    worst_timing,
)
from harness.validate.traffic_report import to_json as traffic_json
from harness.validate.traffic_report import to_junit as traffic_junit
from targets.algorithms import PEER_MODELS, Policy

from . import term_table
from .judge_progress import JudgeProgress
from .log_options import add_log_options, log_options
from .progress import RunProgress

EXIT_PASS, EXIT_FAIL, EXIT_INTERRUPTED = 0, 1, 130
MAX_REPLICAS = 1000
"""As a policy file's ``nodes``: the fleet is simulated node by node."""


def _replicas(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= MAX_REPLICAS:
        raise argparse.ArgumentTypeError(f"{text!r}: replicas are a whole number from 1 to {MAX_REPLICAS}")
    return n


@dataclass
class ConfigInput:
    """``--config FILE``: the product's file as read, and the policy file that stands for it."""

    text: str
    config: PeerConfig
    policy: PolicyFile
    spec: Peer


def _config_input(args: argparse.Namespace, base: PolicyFile | None) -> ConfigInput:
    """The product's file read (its includes for NGINX), recognised, and mapped to its models on its fleet."""
    text, spec = read_product_file(args.config, args.peer, "--config")
    config = read_config(spec, text, args.config)
    return ConfigInput(text, config, policy_of_config(spec, config, base, args.config, args.replicas), spec)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("validate", help="gate a rate limit policy file before rollout (lints + simulated checks)")
    p.add_argument("policy", type=Path, nargs="?",
                   help="policy YAML (see docs/validate.md, campaigns/policies/); with --config: its traffic and thresholds")
    p.add_argument("--config", type=Path, metavar="FILE", help="a peer's own config file to judge (an nginx.conf with limit_req)")
    p.add_argument("--peer", metavar="NAME", help="--config: whose file it is (default: recognised from the file)")
    p.add_argument("--replicas", type=_replicas, metavar="N",
                   help="--config: the replicas the file runs on (default: what the file declares, else 1)")
    p.add_argument("--url", metavar="URL", help="--live: a running endpoint, judged by the policy it claims (POLICY)")
    p.add_argument("--key", metavar="ip|header:NAME[=PREFIX]",
                   help="--url: how the endpoint tells clients apart (default: the claimed limit's key; see judge)")
    p.add_argument("--live", action="store_true",
                   help="also replay the traffic over HTTP against a target built from the policy (P99, CPU, ...)")
    p.add_argument("--out", type=Path, metavar="DIR", help="--live: keep the live results folder (and its report) here")
    p.add_argument("--json", metavar="PATH|-", help="write the verdict as JSON ('-' for stdout)")
    p.add_argument("--junit", type=Path, metavar="PATH", help="write JUnit XML (one testcase per check)")
    t = p.add_argument_group("judge on an access log (docs/validate.md: who would have been refused)")
    t.add_argument("--traffic", type=Path, metavar="LOG", help="an access log (plain or .gz): whom the policy would have refused")
    t.add_argument("--policy", dest="more_policies", type=Path, action="append", default=[], metavar="FILE",
                   help="--traffic: another candidate policy, judged side by side (repeatable)")
    add_log_options(t, "--traffic")
    t.add_argument("--classes", type=Path, metavar="FILE", help="--traffic: key classes (regex on key or user agent -> class)")
    t.add_argument("--html", type=Path, metavar="PATH", help="--traffic: write the report.html section here")
    p.set_defaults(func=cmd_validate)


def validate(policy: PolicyFile) -> list[CheckVerdict]:
    """Every lint, then every simulated check that applies: the whole verdict."""
    return run_lints(policy) + run_checks(policy) + run_latency_checks(policy)


@dataclass
class PeerInput:
    """``--config`` or ``--url``: what judges the policy live instead of a suite target."""

    live: ProcessPeer | None = None
    url: str | None = None
    key: KeySpec | None = None
    nominal: Policy | None = None
    refused: frozenset[int] = frozenset({429})
    verdicts: list[CheckVerdict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    approximate: str | None = None
    """Why the file's model is only approximate: its simulated rows are labelled so."""


def _check_outputs(args: argparse.Namespace) -> None:
    """Every file the verdict is written to, writable before anything is judged."""
    for flag, path in (("--json", args.json), ("--junit", args.junit), ("--html", args.html)):
        if path is not None and str(path) != "-":
            check_output(Path(path), flag, folder=False)


def _inputs(args: argparse.Namespace) -> tuple[PolicyFile, str, PeerInput | None]:
    """The policy to judge, its source, and the peer input; every bad input before anything starts."""
    if args.out is not None and not args.live:
        raise CampaignError("--out: only with --live (it keeps the live results folder)")
    for flag, given in (("--peer", args.peer), ("--replicas", args.replicas)):
        if given is not None and args.config is None:
            raise CampaignError(f"{flag}: only with --config FILE (the peer's own config file)")
    if args.config is not None and args.url is not None:
        raise CampaignError("--config and --url: judge one of them at a time")
    if args.config is None and args.policy is None:
        raise CampaignError("validate: a policy file, or --config FILE (a peer's own config file)")
    if args.url is not None and (args.policy is None or not args.live):
        raise CampaignError("--url: with --live and the policy file it claims to enforce")
    if args.key is not None and args.url is None:
        raise CampaignError("--key: only with --url URL (how the endpoint tells clients apart)")
    check_out(args.out)
    _check_outputs(args)
    base = load_policy(args.policy) if args.policy is not None else None
    peer_models = [lim.name for lim in (base.limits if base else []) if lim.algorithm in PEER_MODELS]
    if args.live and args.url is None and args.config is None and peer_models:
        raise CampaignError(f"limits[{peer_models[0]}].algorithm: a peer model no suite target runs; "
                            "judge it live with --url URL (the endpoint that claims it)")
    if args.url is not None:
        assert base is not None
        return base, str(args.policy), PeerInput(url=check_url(args.url), key=key_spec(args.key, base.limits[0]))
    if args.config is None:
        assert base is not None
        return base, str(args.policy), None
    read = _config_input(args, base)
    config = read.config
    given = PeerInput(nominal=config.limits[0].policy, refused=frozenset({429, config.reject_status}),
                      verdicts=config_lints(read.spec, config), approximate=config.approximate,
                      notes=[*config.notes, *([f"every simulated figure is approximate: {config.approximate}"]
                                              if config.approximate else []), *fleet_notes(config, args.replicas)])
    if args.live:
        given.live = live_peer(read.spec.name).from_config(read.text)
        read.spec.executable()
    return read.policy, str(args.config), given


def _measured(policy: PolicyFile, given: PeerInput, out: Path | None, console) -> list[CheckVerdict]:
    """``--url``: measured by the judge's session (within its caps), then the claim compared."""
    assert given.url is not None and given.key is not None
    console.print(f"live: {given.url}: measured from outside (fingerprint and worst-case hunt, every request on a "
                  "key of its own), then compared with the claim", style="dim", highlight=False)
    caps = Caps()
    with JudgeProgress(Console(stderr=True), given.url, caps.max_requests, caps.max_time_s) as progress:
        rows, log = url_verdicts(policy, given.url, given.key, caps, progress.heard)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        write_text(out / JUDGE_LOG, log)
    return rows


def _traffic_inputs(args: argparse.Namespace) -> tuple[list[PolicyFile], list, LogTraffic, str | None] | None:
    """The candidate policies, the classes, the log and why a config file's model is approximate
    (None: exact), all read (bad input) before anything is written; None without --traffic."""
    options = log_options(args, args.traffic is not None, "--traffic LOG")
    if args.traffic is None:
        if args.more_policies or args.classes or args.html:
            raise CampaignError("--policy/--classes/--html: only with --traffic LOG")
        return None
    if args.live or args.url is not None:
        raise CampaignError("--traffic: judges policy or config files on a log; not with --live or --url")
    if args.policy is None and args.config is None:
        raise CampaignError("--traffic: give the policy file to judge (and more with --policy FILE), or --config FILE")
    _check_outputs(args)
    policies = [load_policy(path) for path in [*([args.policy] if args.policy else []), *args.more_policies]]
    approximate = None
    if args.config is not None:  # the product's file judged in the policy file's place (its thresholds, routes)
        base = policies[0] if args.policy else None
        read = _config_input(args, base)
        policies, approximate = [read.policy, *policies[1 if base else 0:]], read.config.approximate
    classes = load_classes(args.classes) if args.classes is not None else []
    traffic = load_traffic(args.traffic, options)
    return policies, classes, traffic, approximate


def cmd_traffic(args: argparse.Namespace, policies: list[PolicyFile], classes: list, traffic: LogTraffic,
                approximate: str | None = None) -> int:
    """Whom each policy would have refused on the log; exit 1 if a class's refused share passes its max;
    ``approximate``: the config file's model is, and its refusals are labelled so."""
    to_stdout = args.json == "-"
    console = term_table.console(stderr=to_stdout)
    started = time.perf_counter()
    outcomes = judge(traffic, policies, classes)
    facts = traffic_facts(traffic)
    if to_stdout:
        sys.stdout.write(traffic_json(facts, outcomes))
    elif args.json:
        write_text(Path(args.json), traffic_json(facts, outcomes))
    if args.junit is not None:
        write_text(args.junit, traffic_junit(outcomes, time.perf_counter() - started))
    if args.html is not None:
        write_text(args.html, to_html(facts, outcomes))
    for note in [*notes(facts), *([f"{policies[0].name}: every refusal count is approximate: {approximate}"]
                                   if approximate else [])]:
        console.print(f"note: {note}", highlight=False)
    console.print(summary_table(outcomes))
    for o in worst_timing(outcomes):
        console.print(detail_tables(o))
        if (table := class_table(o)) is not None:
            console.print(table)
    return EXIT_PASS if all(o.passed for o in outcomes) else EXIT_FAIL


def _write_json(target: str | None, doc: str) -> None:
    if target == "-":
        sys.stdout.write(doc)
    elif target:
        write_text(Path(target), doc)


def cmd_validate(args: argparse.Namespace) -> int:
    judged = _traffic_inputs(args)
    if judged is not None:
        return cmd_traffic(args, *judged)
    policy, source, given = _inputs(args)
    to_stdout = args.json == "-"
    console = term_table.console(stderr=to_stdout)
    started = time.perf_counter()
    if args.live:
        console.print("lints and simulated checks", style="dim", highlight=False)
    simulated = validate(policy)
    if given is not None and given.approximate:
        simulated = labelled(simulated, given.approximate)
    verdicts = (given.verdicts if given else []) + simulated
    live: LiveOutcome | None = None
    if args.live:
        try:
            if given is not None and given.url is not None:
                verdicts += _measured(policy, given, args.out, console)
            elif given is not None and given.live is not None:
                console.print(f"live: the file in a real {given.live.spec.system}: its refusal, Retry-After and the "
                              "model's count", style="dim", highlight=False)
                try:
                    verdicts += peer_verdicts(policy, live=given.live, nominal=given.nominal, refused=given.refused,
                                              out=args.out)
                except RunFailed as exc:  # the product refused the file: its own error lines, exit 2
                    raise PeerError(f"{source}: {exc}") from None
            else:
                with RunProgress(console) as progress:
                    live = run_live(policy, args.out, lambda text: console.print(text, style="dim", highlight=False),
                                    progress.events)
        except Interrupted as exc:
            kept = f"; partial results in {args.out}" if args.out else ""
            console.print(f"interrupted ({exc}): the target and Locust are stopped{kept}", highlight=False)
            return EXIT_INTERRUPTED
        except JudgeError as exc:  # --url: one line, exit 2, what the session measured kept
            _write_json(args.json, to_json(policy.name, source, verdicts, measured=exc.measured))
            raise
        if live is not None:
            verdicts += live_verdicts(policy, live, verdicts)
    seconds = time.perf_counter() - started
    _write_json(args.json, to_json(policy.name, source, verdicts, live, notes=given.notes if given else None))
    if args.junit is not None:
        write_text(args.junit, to_junit(policy.name, verdicts, seconds))
    console.print(verdict_table(policy.name, verdicts))
    for text in suggestions(verdicts):
        console.print(text, highlight=False)
    for note in [*(given.notes if given else []), *(live.plan.notes if live else [])]:
        console.print(f"note: {note}", highlight=False)
    if live and live.folder:
        console.print(f"live results: {live.folder} (report.html)", highlight=False)
    return EXIT_PASS if all(v.passed for v in verdicts) else EXIT_FAIL
