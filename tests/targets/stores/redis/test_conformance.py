"""Conformance: every Lua script makes the pure transition's decisions, on a standalone Redis."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis_conformance import PARAMS, replay, steps

from targets.algorithms import ALGORITHMS


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_redis_matches_memory(name: str, client, namespace: str) -> None:
    @settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(params=PARAMS[name], trace=steps)
    def check(params, trace) -> None:
        replay(client, name, params, trace, namespace)

    check()


def test_sliding_log_fractional_costs(client, namespace: str) -> None:
    """Running sums of fractional costs round the same way in Lua as in Python."""
    @settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(params=PARAMS["sliding_log"], trace=st.lists(st.tuples(st.integers(0, 20), st.sampled_from([0.1, 0.3, 0.7]),
                                                                  st.just(False)), min_size=1, max_size=30))
    def check(params, trace) -> None:
        replay(client, "sliding_log", params, trace, namespace)

    check()


def test_sliding_log_long_logs(client, namespace: str) -> None:
    """Logs of up to ~60 entries, bursts and long gaps: many entries expire in one call (the
    script finds them by doubling then bisection over the list) and rejections bisect by sum."""
    params = st.builds(ALGORITHMS["sliding_log"].params_type, st.integers(10, 60).map(float), st.sampled_from([0.5, 1.0, 3.0]))
    trace = st.lists(st.tuples(st.sampled_from([0, 0, 0, 1, 2, 8, 40, 100]), st.integers(1, 3), st.just(False)),
                     min_size=1, max_size=150)

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(params=params, trace=trace)
    def check(params, trace) -> None:
        replay(client, "sliding_log", params, trace, namespace)

    check()
