"""A peer outside a campaign, for the faithfulness test and benchmark: the peer limiting by a
policy in front of a ``none`` target, and the peer's mapped model deciding the same requests."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from contract.atomic import write_text
from harness.campaign.peers import model_policy
from harness.processes.ports import free_ports
from targets.algorithms import Policy, build_params, get_algorithm

from ..supervise import Processes
from . import ProcessPeer, process_peer


@contextmanager
def peer_before_none(name: str, policy: Policy, folder: Path, env: dict[str, str] | None = None,
                     live: ProcessPeer | None = None) -> Iterator[tuple[str, Path]]:
    """Peer ``name`` (or ``live``: one running a user's file) limiting by ``policy`` in front of a
    ``none`` target; yields (its URL, the logs folder); both stopped on exit. ``env``: the peer's
    (REDIS_URL for a Redis-backed one)."""
    processes = Processes()
    logs = folder / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    down_port, down_admin, port = free_ports(3)
    config = folder / "downstream.yaml"
    write_text(config, f"algorithm: none\nlimit: {policy.limit}\nwindow_s: {policy.window_s}\n"
                       f"decision_log: {{path: {logs / 'downstream-decisions.parquet'}}}\n"
                       "downstream: {service_time: {median_ms: 1.0, sigma: 0}}\n")
    try:
        processes.start_targets([config], [down_port], [down_admin], logs, None)
        yield (live or process_peer(name)).start(processes, policy, port=port, downstream_port=down_port, run_dir=folder,
                                              env=env).url, logs
    finally:
        processes.stop_all()


def mapped_decisions(name: str, policy: Policy, times: Sequence[float], keys: Sequence[str],
                     instead: str | None = None) -> list[bool]:
    """The suite's model of peer ``name`` (harness/campaign/peers/) on the same requests: one
    decision per (time, key), in the order given (times ascending). ``instead``: another
    algorithm under the policy itself, to measure how far from the peer it is."""
    algorithm, mapped = model_policy(name, policy) if instead is None else (instead, policy)
    return model_decisions(get_algorithm(algorithm).decide, build_params(algorithm, mapped), times, keys)


def model_decisions(decide: Callable, params: object, times: Sequence[float], keys: Sequence[str]) -> list[bool]:
    """One algorithm deciding (time, key) requests of cost 1 in the order given, a state per key."""
    states: dict[str, object] = {}
    out = []
    for t, key in zip(times, keys):
        decision, states[key] = decide(states.get(key), float(t), 1.0, params)
        out.append(decision.allowed)
    return out
