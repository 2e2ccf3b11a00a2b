"""Each scenario's ``expected_requests()`` (what the simulator's memory guard reads before anything
is generated) held against what its ``generate()`` really plans, for every scenario, over drawn
policies and seeds: a model whose arithmetic drifts from its generator is caught here, not by a
machine that runs out of memory. Deterministic plans match it exactly; Poisson ones stay within
five standard deviations of it; a closed-loop model's first requests never pass it (its
follow-ups, at their most, are counted in it too)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scenarios import SCENARIOS, build_model

EXACT = {"boundary_burst", "edge_hunt", "ramp"}
"""Plans whose size is fixed by their parameters."""
AT_MOST = {"page_load_burst"}
"""``expected_requests`` is every user's pages back to back at the shortest think time: a bound."""
OPEN_LOOP = sorted(name for name, spec in SCENARIOS.items() if name != "trace_file" and not spec.model.reactive)
CLOSED_LOOP = sorted(name for name, spec in SCENARIOS.items() if spec.model.reactive)


def test_every_scenario_is_held_to_its_count():
    assert set(OPEN_LOOP) | set(CLOSED_LOOP) == set(SCENARIOS) - {"trace_file"}
    assert set(OPEN_LOOP) >= EXACT | AT_MOST


@pytest.mark.parametrize("name", OPEN_LOOP)
@settings(max_examples=12, deadline=None)
@given(limit=st.integers(2, 60), window_s=st.sampled_from([1.0, 2.0, 10.0]),
       seed=st.integers(0, 2**16))
def test_an_open_loop_plan_is_the_size_its_model_says(name, limit, window_s, seed):
    model = build_model(name, limit, window_s, seed)
    planned, expected = len(model.generate()), model.expected_requests()
    if name in EXACT:
        assert planned == expected
    elif name in AT_MOST:
        assert planned <= expected
    else:  # a Poisson count of mean ``expected``
        assert abs(planned - expected) <= 5 * math.sqrt(expected) + 5, (planned, expected)


@pytest.mark.parametrize("name", CLOSED_LOOP)
@settings(max_examples=10, deadline=None)
@given(limit=st.integers(2, 60), window_s=st.sampled_from([1.0, 2.0]),
       seed=st.integers(0, 2**16))
def test_a_closed_loop_models_first_requests_never_pass_its_count(name, limit, window_s, seed):
    model = build_model(name, limit, window_s, seed)
    assert 0 < len(model.generate()) <= model.expected_requests()
