"""Live decisions judged on the times the limiter recorded, never on the times a test meant to send.

A busy machine shifts every send; a limiter decides on the moment a request reached it. So a live
test asserts that the limiter's recorded decisions are its model's decisions on the limiter's own
recorded times (request by request), and keeps hand-computed outcomes for the model on the
planned times, where they are exact.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from harness.live.peers.standalone import mapped_decisions, model_decisions
from targets.algorithms import Policy, build_params, get_algorithm


def in_time_order(decisions: pd.DataFrame) -> pd.DataFrame:
    """The decision log in the order the limiter decided (its rows are joined per process)."""
    return decisions.sort_values("t", kind="stable").reset_index(drop=True)


def suite_model_agrees(run: Path, decisions: pd.DataFrame | None = None) -> pd.DataFrame:
    """Assert a suite run's decisions are its algorithm's, with the run's own params, on the
    times its target recorded; returns the decisions in time order."""
    info = json.loads((run / "run.json").read_text())
    df = in_time_order(decisions if decisions is not None else pd.read_parquet(run / "decisions.parquet"))
    algorithm = info["algorithm"]
    params = type(build_params(algorithm, Policy(**info["policy"])))(**info["params"])
    agree(df, model_decisions(get_algorithm(algorithm).decide, params, df["t"], df["key"]), run.name)
    return df


def peer_model_agrees(name: str, policy: Policy, decisions: pd.DataFrame) -> pd.DataFrame:
    """Assert a peer's recorded decisions are its mapped model's on the peer's own times."""
    df = in_time_order(decisions)
    agree(df, mapped_decisions(name, policy, df["t"], df["key"]), name)
    return df


def agree(decisions: pd.DataFrame, model: list[bool], who: str) -> None:
    """The model admitted as many as the limiter at every (key, recorded time). Requests a log
    stamps with one time (NGINX's and HAProxy's whole milliseconds) have no recorded order among
    themselves, and their log lines come in the order they ended, not the order they were decided:
    which of them got the last token is unknowable, how many did is exact."""
    both = decisions.assign(model=model)
    grouped = both.groupby(["key", "t"], sort=False)[["allowed", "model"]].sum()
    differ = grouped[grouped["allowed"] != grouped["model"]]
    assert differ.empty, f"{who}: its decisions are not its model's on its own times:\n{differ.head(10)}"


def planned(plan: list[tuple[float, str | None, int]], start: float) -> tuple[list[float], list[str], list[str]]:
    """A test's schedule ``(offset, API key or None, requests)`` at the times it means, from
    ``start``, each request 1 ms after the one before it; a request without a key is keyed by
    the client's address. Returns (times, keys, request ids ``<key or ip>-<offset>-<i>``), in
    time order, for the model's hand-computed outcome."""
    rows = sorted((start + at + i / 1000, key or "127.0.0.1", f"{key or 'ip'}-{at}-{i}")
                  for at, key, n in plan for i in range(n))
    return [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]
