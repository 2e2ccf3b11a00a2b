"""A log judged a block at a time from disk is judged as at once: the on-disk sort is one stable
sort of the whole log, a block never splits a second, and every replay (layered limits, requests
dealt to nodes round-robin, Redis layers, both whole-second bounds) and every sum (keys, routes,
classes, time bins, the top keys' worst bursts) comes out the same with blocks of a few requests
as with one block."""

from __future__ import annotations

import re
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.campaign import request_records
from harness.campaign.key_classes import KeyClass
from harness.campaign.log_traffic import load_traffic
from harness.campaign.policy_file import parse_policy
from harness.campaign.request_records import RECORD, RecordFile, sorted_by_time, time_blocks
from harness.validate.replay_sums import Bins, Sweep
from harness.validate.traffic import judge
from scenarios.access_log.render import LoggedRequest, render

T0 = 1_760_000_040.0
ROUTES = [{"name": "GET /api/items"}, {"name": "POST /api/reports", "cost": 2}]
POLICIES = [
    {"name": "memory-layers", "routes": ROUTES,
     "limits": [{"name": "per-ip", "key": "ip", "algorithm": "sliding_log", "limit": 6, "window_s": 20},
                {"name": "items", "key": "ip", "routes": ["GET /api/items"], "algorithm": "token_bucket",
                 "limit": 2, "window_s": 5, "burst": 3}]},
    {"name": "three-nodes", "routes": ROUTES, "nodes": 3, "store": {"divide_by_nodes": False},
     "limits": [{"name": "api", "key": "ip", "algorithm": "fixed_window", "limit": 1, "window_s": 10}]},
    {"name": "redis-layers", "routes": ROUTES, "store": {"backend": "redis"},
     "limits": [{"name": "all", "key": "global", "algorithm": "gcra", "limit": 30, "window_s": 10},
                {"name": "per-ip", "key": "ip", "algorithm": "sliding_window_counter", "limit": 5, "window_s": 10}]},
]
CLASSES = [(KeyClass(name="crawler", agent="bot", max_refused=0.5), re.compile("bot")),
           (KeyClass(name="first", key=r"\.1$"), re.compile(r"\.1$"))]


def records(times: list[int]) -> np.ndarray:
    out = np.zeros(len(times), dtype=RECORD)
    out["t"] = times
    out["identity"] = np.arange(len(times))  # each record's place in the log: what a stable sort keeps
    return out


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=2, max_size=200), st.integers(1, 30), st.integers(1, 50))
def test_the_on_disk_sort_is_one_stable_sort(times: list[int], bucket: int, cells: int) -> None:
    raw = RecordFile()
    raw.append(records(times))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(request_records, "SORT_RECORDS", bucket)
        patch.setattr(request_records, "CELLS", cells)
        out = sorted_by_time(raw.sealed(), min(times), max(times))
    whole = records(times)
    assert out.read(0, out.n).tolist() == whole[np.argsort(whole["t"], kind="stable")].tolist()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 12), min_size=1, max_size=150), st.integers(1, 20))
def test_blocks_cover_the_log_in_order_and_never_split_a_second(times: list[int], size: int) -> None:
    file = RecordFile()
    file.append(records(sorted(times)))
    blocks = list(time_blocks(file.sealed(), size))
    assert [first for first, _ in blocks] == np.cumsum([0] + [len(b) for _, b in blocks])[:-1].tolist()
    assert np.concatenate([b for _, b in blocks]).tolist() == file.read(0, file.n).tolist()
    assert all(a["t"][-1] != b["t"][0] for (_, a), (_, b) in pairwise(blocks))


def _log(tmp_path: Path, rows: list[tuple[int, int, int]]) -> Path:
    """A combined log (whole seconds) of (second, client, route) rows, written in the given order."""
    logged = [LoggedRequest(T0 + s, f"10.0.0.{c}", *(("POST", "/api/reports") if r else ("GET", "/api/items")),
                            agent="Googlebot" if c == 3 else "Mozilla/5.0") for s, c, r in rows]
    path = tmp_path / "access.log"
    path.write_text(render(logged, "combined"))
    return path


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 130), st.integers(1, 5), st.integers(0, 1)), min_size=1, max_size=160),
       st.integers(1, 9))
def test_small_blocks_judge_as_one_block(tmp_path: Path, rows: list[tuple[int, int, int]], size: int) -> None:
    """Out-of-order whole-second logs spanning up to 130 s (the spread bound's chart may need
    wider bins than the packed one's), judged with blocks and sort buckets of a few records."""
    path = _log(tmp_path, rows)
    policies = [parse_policy(p, p["name"]) for p in POLICIES]
    at_once = judge(load_traffic(path), policies, CLASSES)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(request_records, "BLOCK_RECORDS", size)
        patch.setattr(request_records, "SORT_RECORDS", size)
        patch.setattr(request_records, "CELLS", 16)
        in_blocks = judge(load_traffic(path), policies, CLASSES)
    assert in_blocks == at_once


def test_bins_merge_into_the_width_the_spread_span_needs() -> None:
    """Counted for a 120 s span (1 s bins, 121 of them); a spread time at 120.5 s widens the span
    past 120 bins: merged into 10 s bins, by hand. Without it the 1 s bins stay."""
    bins = Bins(T0, T0 + 120)
    bins.add(np.array([T0, T0 + 9.5, T0 + 10, T0 + 120, T0 + 120.5]), np.array([True, False, False, True, True]))
    assert bins.result() == (10, T0, [2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2], [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2])
    exact = Bins(T0, T0 + 120)
    exact.add(np.array([T0, T0 + 1, T0 + 120]), np.array([False, False, True]))
    assert exact.result() == (1, T0, [1, 1] + [0] * 118 + [1], [0] * 120 + [1])


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 400), st.integers(1, 3)), min_size=1, max_size=80), st.integers(1, 60),
       st.integers(1, 10))
def test_a_sweep_fed_in_blocks_finds_the_whole_maximum(events: list[tuple[int, int]], span: int, size: int) -> None:
    t = np.array(sorted(e[0] for e in events), dtype=np.float64) / 10
    cost = np.array([e[1] for e in events], dtype=np.float64)
    sweep = Sweep(span / 10)
    for first in range(0, len(t), size):
        sweep.add(t[first:first + size], cost[first:first + size])
    brute = max(cost[(t >= s) & (t < s + span / 10)].sum() for s in t)
    assert sweep.worst == brute
