"""The store names, typed once: where a run's limiter state lives, as campaigns, run folders,
run.json and the command line spell it (``memory``, ``redis-local-split``), and what that means.

A store choice is a kind (``memory`` or ``redis``), a Redis mode and whether a local mode divides
the limit by the nodes (``split``); its ``label`` is the one spelling. The campaign, the live
runner, validate, the target and the simulator all read a choice through ``StoreChoice.parse``
instead of taking the string apart, and the argparse and pydantic choices are derived from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from .errors import BadInput

RedisMode = Literal["shared", "local", "leased", "naive"]
"""How the Redis store keeps a limit (docs/redis.md)."""
REDIS_MODES: tuple[RedisMode, ...] = get_args(RedisMode)
VirtualStore = Literal["local", "local_split", "shared"]
"""How the simulator deploys a limit on a fleet: each node alone with L, each with L/N, or one
shared state (``multi_node``'s ``virtual_store``; a live run's store maps to one)."""
StoreKind = Literal["memory", "redis"]
STORE_KINDS: tuple[StoreKind, ...] = get_args(StoreKind)


class StoreError(BadInput):
    """A store name that is none of the choices."""


@dataclass(frozen=True)
class StoreChoice:
    kind: StoreKind = "memory"
    mode: RedisMode | None = None
    """None on the memory store, and on a plain ``redis`` entry (the campaign's ``redis.mode``)."""
    split: bool = False
    """Local mode with L/N per node."""

    @property
    def label(self) -> str:
        """The one spelling: ``memory``, ``redis``, ``redis-<mode>``, ``redis-local-split``."""
        if self.kind == "memory":
            return "memory"
        return "redis" if self.mode is None else f"redis-{self.mode}" + ("-split" if self.split else "")

    @classmethod
    def parse(cls, label: str) -> StoreChoice:
        choice = BY_LABEL.get(label)
        if choice is None:
            raise StoreError(f"unknown store {label!r}; choose from: {', '.join(STORE_LABELS)}")
        return choice

    def resolved(self, default_mode: RedisMode) -> StoreChoice:
        """A plain ``redis`` entry in the campaign's mode; any other choice as it is."""
        return StoreChoice("redis", default_mode) if self.kind == "redis" and self.mode is None else self

    def under(self, label: str) -> bool:
        """Whether ``--store label`` selects this choice: itself, or a family it heads
        (``redis`` every Redis mode, ``redis-local`` both local ones)."""
        return self.label == label or self.label.startswith(f"{label}-")

    @property
    def shares_limit(self) -> bool:
        """One limit for every process and node (a Redis mode other than local)."""
        return self.kind == "redis" and self.mode != "local"

    @property
    def virtual_store(self) -> VirtualStore:
        """The simulator's deployment of this store on a fleet."""
        if self.mode == "local":
            return "local_split" if self.split else "local"
        return "shared"


STORE_CHOICES: tuple[StoreChoice, ...] = (
    StoreChoice("memory"), StoreChoice("redis"), StoreChoice("redis", "shared"), StoreChoice("redis", "local"),
    StoreChoice("redis", "local", split=True), StoreChoice("redis", "leased"), StoreChoice("redis", "naive"),
)
"""Every store a campaign, ``run --store`` and run folders name, in the order ``--help`` lists them."""
STORE_LABELS: tuple[str, ...] = tuple(c.label for c in STORE_CHOICES)
BY_LABEL: dict[str, StoreChoice] = {c.label: c for c in STORE_CHOICES}
