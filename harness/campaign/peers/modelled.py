"""Peers the suite models but cannot run here (envoyproxy/ratelimit, Kong, caddy-ratelimit): their
config files are read and judged by an exact model of the product's source, named with the
version it was read at; ``--live`` and campaigns refuse them in one line."""

from __future__ import annotations

from targets.algorithms import Policy, PolicyError, build_params

from .base import ConfigLimit, Peer, PeerError

LONGEST_SIMULATED_S = 535_680
"""The longest window the simulated checks replay: they draw traffic over 5 windows, and a
scenario spans at most 31 days (2,678,400 s). A week, a month or a year is read and modelled
but left out of the simulation (a note says so), not refused."""


def simulated(limits: list[ConfigLimit]) -> tuple[list[ConfigLimit], list[str]]:
    """The limits the simulation can replay, and a note for each it cannot."""
    kept = [lim for lim in limits if lim.policy.window_s <= LONGEST_SIMULATED_S]
    notes = [f"line {lim.line}: {lim.name}: {lim.policy.limit:g} per {lim.policy.window_s:g} s is modelled but not "
             f"simulated (windows above {LONGEST_SIMULATED_S} s: the simulation spans at most 31 days); the verdict "
             "judges the shorter limits" for lim in limits if lim not in kept]
    return kept, notes


class ModelledPeer(Peer):
    """A product that does not run on this machine: its model is its only judge."""

    algorithm: str
    """Its model in targets/algorithms/ (PEER_MODELS), whose docstring cites the source lines."""
    source: str
    """The product and the commit the model was read at."""
    why_not_run: str
    """Why it does not run here."""

    def model(self, policy: Policy) -> tuple[str, Policy]:
        try:
            build_params(self.algorithm, policy)
        except PolicyError as exc:
            raise PeerError(f"peer {self.name}: {exc}") from None
        return self.algorithm, policy

    def preflight(self) -> None:
        raise PeerError(f"peer {self.name}: {self.system} does not run here ({self.why_not_run}); "
                        "validate --config judges its file by the model")

    @property
    def verdict_note(self) -> str:
        """The line every verdict of its files carries."""
        return (f"{self.system} is modelled, not run here ({self.why_not_run}): {self.algorithm} is a model of "
                f"{self.source} (targets/algorithms/{self.algorithm}.py cites the source lines)")
