"""Which run of B is which run of A, and what differs between them besides the code under test.

Runs are matched by what they are (run.json's scenario, algorithm, store and system; a peer's
virtual twin apart from its live run), not by folder name. What a matched pair may still differ
in is named before any verdict: the policy (then nothing can be called a regression: the two
limit different things), the seeds (other traffic), virtual against live, and the machine.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from .labels import row_policy

Row = dict[str, Any]
Key = tuple[Any, ...]
IDENTITY = ("scenario", "algorithm", "store", "system")
MACHINE = ("platform", "machine", "cpu_count")
"""The machine facts (campaign.yaml ``machine:``) that change what a live run measures."""
NAMED = 3
"""Runs named in a difference's line; the rest are counted."""


def identity(row: Row) -> Key:
    return (*(row.get(k) for k in IDENTITY), row.get("twin_of") is not None)


def by_identity(groups: Sequence[Row]) -> dict[Key, Row]:
    """Groups by identity; groups that share one in a folder (the same run twice under two
    names) keep their names apart too."""
    counts = Counter(identity(g) for g in groups)
    return {identity(g) if counts[identity(g)] == 1 else (*identity(g), g["run"]): g for g in groups}


def _names(runs: Sequence[str]) -> str:
    more = f" and {len(runs) - NAMED} more" if len(runs) > NAMED else ""
    return ", ".join(runs[:NAMED]) + more


def _seeds(row: Row) -> str:
    seeds = row.get("seeds") or [row.get("seed")]
    return "unknown" if None in seeds else ", ".join(str(s) for s in sorted(seeds))


def _kind(row: Row) -> str:
    return "virtual" if row.get("kind") == "virtual" else "live"


def _line(what: str, pairs: Sequence[tuple[Row, Row]], say: Any) -> list[str]:
    if not pairs:
        return []
    a, b = pairs[0]
    return [f"{what} in {len(pairs)} run(s): A {say(a)}, B {say(b)} ({_names([x['run'] for x, _ in pairs])})"]


def policies_differ(pairs: Sequence[tuple[Row, Row]]) -> list[tuple[Row, Row]]:
    return [(a, b) for a, b in pairs if row_policy(a) != row_policy(b)]


def scenarios(a: Sequence[Row], b: Sequence[Row]) -> list[str]:
    """The scenarios one side ran and the other did not."""
    sa, sb = {r["scenario"] for r in a}, {r["scenario"] for r in b}
    return [f"scenarios only in {side}: {', '.join(sorted(only))}" for side, only in (("A", sa - sb), ("B", sb - sa)) if only]


def _machine(facts: Mapping[str, Any]) -> str:
    return "unknown" if not any(facts.values()) else f"{facts['platform']} {facts['machine']}, {facts['cpu_count']} CPUs"


def machine(campaign_a: Mapping[str, Any], campaign_b: Mapping[str, Any], pairs: Sequence[tuple[Row, Row]]) -> list[str]:
    """The machines, when they differ and a live run measured on one of them."""
    ma, mb = ({k: (c.get("machine") or {}).get(k) for k in MACHINE} for c in (campaign_a, campaign_b))
    live = any(_kind(x) == "live" for pair in pairs for x in pair)
    return [f"machines differ: A {_machine(ma)}, B {_machine(mb)}"] if ma != mb and live else []


def differences(pairs: Sequence[tuple[Row, Row]]) -> list[str]:
    """One line per kind of difference between matched runs, the policies first."""
    return [*_line("POLICIES DIFFER", policies_differ(pairs), row_policy),
            *_line("seeds differ", [(a, b) for a, b in pairs if _seeds(a) != _seeds(b)], _seeds),
            *_line("virtual against live", [(a, b) for a, b in pairs if _kind(a) != _kind(b)], _kind)]
