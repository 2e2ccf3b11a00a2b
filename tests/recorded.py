"""Live decisions judged on the times the limiter recorded, never on the times a test meant to send.

A busy machine shifts every send; a limiter decides on the moment a request reached it. So a live
test asserts that the limiter's recorded decisions are its model's decisions on the limiter's own
recorded times (request by request), and keeps hand-computed outcomes for the model on the
planned times, where they are exact.
"""

from __future__ import annotations

import csv
import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pyarrow as pa

from analysis.header_truth import Answer, header_truth
from analysis.worst_case import worst_case
from contract import decision_file
from contract.limit_headers import LimitFields
from harness.judge.hunt import fingerprint_of, seen
from harness.judge.verdict import Verdict
from harness.live.peers.standalone import mapped_decisions, model_decisions
from harness.sim.fingerprint import agreement
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


def bare_key(key: str) -> str:
    """A decision log's key as the client named it (the suite's target logs ``ip:ADDR``, ``api_key:VALUE``)."""
    return key.split(":", 1)[1] if key.startswith(("ip:", "api_key:", "user:")) else key


def logged(path: Path, answers: list[Answer], timeout_s: float = 10.0) -> pd.DataFrame:
    """The decisions a running suite target logged for ``answers``' keys, once all are flushed
    (every second)."""
    keys = {a.key for a in answers}
    deadline = time.monotonic() + timeout_s
    while True:
        df = decision_file.read_table(path).to_pandas() if decision_file.exists(path) else pd.DataFrame()
        mine = df[df["key"].map(bare_key).isin(keys)] if len(df) else df
        if len(mine) >= len(answers) or time.monotonic() > deadline:
            return mine
        time.sleep(0.3)


def limiter_dated(answers: list[Answer], decisions: pd.DataFrame) -> list[Answer]:
    """A judging session's answers dated at the times the limiter recorded deciding them (sent =
    done = its decision time), matched per key in the order sent (the judge awaits each answer
    before the next request); asserts the limiter's decisions are the answers' one by one."""
    times: dict[str, list[tuple[float, bool]]] = {}
    for row in in_time_order(decisions).itertuples():
        times.setdefault(bare_key(row.key), []).append((row.t, bool(row.allowed)))
    assert sum(map(len, times.values())) == len(answers), "the limiter logged other requests than the session's"
    seen: dict[str, int] = {}
    dated = []
    for a in sorted(answers, key=lambda a: a.sent):
        i = seen[a.key] = seen.get(a.key, -1) + 1
        t, allowed = times[a.key][i]
        assert allowed == a.allowed, f"{a.key}: request {i + 1} answered {a.status}, logged allowed={allowed}"
        dated.append(replace(a, sent=t, done=t))
    return dated


def recorded_verdict(client: Verdict | None, dated: list[Answer]) -> Verdict:
    """The session's verdict recomputed on the limiter's own times (``limiter_dated``): its
    fingerprint and worst case; the header truth is the client's (a promise made to it), its
    own verdict's where the test has it. Where the client's fit repeats the limiter's decisions
    as well as the best fit on its times, it stays first: two models can tie on a session's
    decisions (a sliding log of 10 per 1 s, and a clock-aligned window of 10 per 1.546 s whose
    edges the hunt never met), and the order of the tie is not the question."""
    fits = fingerprint_of(dated)
    if client is not None:
        again = agreement(client.best.model, client.best.policy, seen(dated))
        if again >= fits[0].agreed:
            fits = [replace(client.best, agreed=again, decisions=len(dated)), *fits]
    truth = client.truth if client else header_truth(dated)
    return Verdict(fits, worst_case(dated, fits[0].policy.window_s), truth, client.roles if client else Counter(),
                   client.seconds if client else 0.0, client.cut if client else None)


def client_answers(path: Path) -> list[Answer]:
    """A judging session's answers from its client log (``judge-client.csv``)."""
    def number(text: str) -> float | None:
        return float(text) if text else None

    with path.open() as f:
        return [Answer(r["key"], float(r["sent"]), float(r["done"]), int(r["status"]),
                       LimitFields(number(r["retry_after_s"]), number(r["limit"]), number(r["window_s"]),
                                   number(r["remaining"]), number(r["reset_s"]), r["form"]))
                for r in csv.DictReader(f)]


def all_logged(read: Callable[[], pa.Table], count: int, timeout_s: float = 10.0) -> pa.Table:
    """A peer's log read again until it holds ``count`` decisions: a peer writes a request's line
    after its answer, and a busy machine writes it late (a fixed sleep is a guess)."""
    deadline = time.monotonic() + timeout_s
    while (table := read()).num_rows < count and time.monotonic() < deadline:
        time.sleep(0.1)
    return table
