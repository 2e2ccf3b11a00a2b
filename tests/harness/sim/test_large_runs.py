"""What lets a simulated run reach ten million requests and the open path go fast, checked
against what it replaces: the downstream's tight loop against one call at a time, the open path
against the event loop, decisions in columns and logs in parts against the whole log. Pure,
fixed seeds."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from harness.sim.decision_columns import DecisionColumns
from harness.sim.downstream_model import DownstreamModel
from harness.sim.simulator import (
    _replay_events,
    client_parts,
    client_table,
    decision_parts,
    decision_table,
    ideal_decisions,
    replay_on,
    virtual_arrivals,
)
from harness.sim.system import SystemSpec
from scenarios import build_model
from targets.algorithms import Decision, Policy, build_params, get_algorithm
from targets.config import DownstreamConfig
from targets.stores.memory import MemoryStore

LOGNORMAL = {"concurrency": 3, "service_time": {"median_ms": 10, "sigma": 0.5}}
SCHEDULED = {**LOGNORMAL, "schedule": [{"at_s": 0, "health": "healthy"}, {"at_s": 0.5, "health": "degraded", "factor": 4},
                                       {"at_s": 1.0, "health": "outage"}, {"at_s": 1.2, "health": "healthy"}]}


@pytest.mark.parametrize("config", [LOGNORMAL, SCHEDULED], ids=["no schedule", "schedule"])
def test_serve_many_gives_exactly_what_serve_gives_one_call_at_a_time(config):
    arrive = np.sort(np.random.default_rng(3).uniform(0, 2, 70_000)).tolist()  # past one block of draws
    one, many = (DownstreamModel(DownstreamConfig.model_validate(config), 7) for _ in range(2))
    assert many.serve_many(arrive) == [one.serve(a) for a in arrive]
    assert (many.busy_s, many.calls, many.failed) == (one.busy_s, one.calls, one.failed)


def steady(duration_s: float = 2.0):
    return build_model("steady", 50, 1.0, 5, {"clients": "40", "load": "1.5", "duration_s": str(duration_s)})


def spec() -> SystemSpec:
    """No target CPU: with it, the event loop hands the downstream its calls in decision order
    and the open path in the order they reach it (a target queue can swap two), and the closed
    form of the target's FIFO rounds differently from the running one."""
    return SystemSpec(DownstreamConfig.model_validate({"concurrency": 8, "service_time": {"median_ms": 20, "sigma": 0.5}}),
                      processes=3, cpu_s=0.0, one_way_s=0.00001, seed=4)


def test_none_on_the_open_path_and_through_the_event_loop_gives_identical_logs():
    model = steady()
    fast = replay_on(MemoryStore(get_algorithm("none"), build_params("none", Policy(50, 1.0))), model, spec())
    slow = _replay_events(model, MemoryStore(get_algorithm("none"), build_params("none", Policy(50, 1.0))), spec())
    assert fast.served is not None and slow.served is not None
    assert client_table(fast).equals(client_table(slow))
    assert list(fast.decisions) == list(slow.decisions) and fast.arrivals == slow.arrivals


def test_a_concurrency_limit_never_reached_answers_as_none_on_the_open_path():
    model = steady()
    roomy = MemoryStore(get_algorithm("concurrency"), build_params("concurrency", Policy(10_000, 1.0)))
    held = _replay_events(model, roomy, spec())
    free = replay_on(MemoryStore(get_algorithm("none"), build_params("none", Policy(50, 1.0))), model, spec())
    assert all(held.allowed) and client_table(held).equals(client_table(free))


def test_decision_columns_read_back_the_decisions_they_were_given():
    given = [Decision(i % 3 == 0, i / 7, float(i % 5), i * 0.5, i / 11) for i in range(70_000)]
    columns = DecisionColumns()
    columns.extend(given[:5])
    for d in given[5:]:
        columns.pending.append(d)
        if len(columns.pending) >= 1000:
            columns.pack()
    assert len(columns) == len(given) and list(columns) == given and columns[12_345] == given[12_345]
    assert columns.column("allowed").tolist() == [d.allowed for d in given]
    assert columns == given and columns != given[:-1] and columns != DecisionColumns.repeated(given[0], len(given))


def test_the_columns_of_decisions_are_the_same_from_a_list_or_from_columns():
    given = [Decision(i % 2 == 0, float(i), i / 4, i * 2.0, i / 8) for i in range(10)]
    columns = DecisionColumns()
    columns.extend(given)
    from_list, from_columns = DecisionColumns.of(given), DecisionColumns.of(columns)
    assert [c.tolist() for c in from_list] == [c.tolist() for c in from_columns] == [list(c) for c in zip(*given)]
    assert [len(c) for c in DecisionColumns.of([])] == [0] * 5


def test_repeated_decision_columns_read_as_that_decision_n_times():
    allow = Decision(True, float("inf"), 0.0, 0.0)
    assert list(DecisionColumns.repeated(allow, 3)) == [allow] * 3 and len(DecisionColumns.repeated(allow, 0)) == 0


def test_logs_in_parts_join_to_the_whole_log():
    model = steady(0.5)
    policy = Policy(50, 1.0)
    result = replay_on(MemoryStore(get_algorithm("token_bucket"), build_params("token_bucket", policy)), model, spec())
    ideal = ideal_decisions(virtual_arrivals(model), policy)
    whole = decision_table(result, "token_bucket", ideal)
    parts = list(decision_parts(result, "token_bucket", ideal, rows=7))
    assert len(parts) == -(-len(whole) // 7) and pa.concat_tables(parts).equals(whole)
    assert pa.concat_tables(list(client_parts(result, rows=7))).equals(client_table(result))
    assert whole.column("allowed").to_pylist() == result.allowed
