"""Traffic models: deterministic, shaped as documented, parameters checked."""

from __future__ import annotations

import numpy as np
import pytest

from scenarios import SCENARIOS, ScenarioError, build_model
from scenarios.base import Request


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_models_are_deterministic_and_sorted(name):
    a = build_model(name, 100, 60, seed=3).arrivals()
    b = build_model(name, 100, 60, seed=3).arrivals()
    assert a == b
    assert len(a) > 0
    assert all(x <= y for x, y in zip(a.t, a.t[1:]))
    assert set(a.client_class) <= {"legit", "abusive"}
    # the seed shapes these models' follow-ups, not their first sends
    assert build_model(name, 100, 60, seed=4).arrivals() != a or name in ("boundary_burst", "edge_hunt", "adversarial_drip", "retry_storm")


def test_boundary_burst_shape():
    a = build_model("boundary_burst", 100, 60, seed=1).arrivals()
    t = np.array(a.t)
    assert len(t) == 600
    for edge in (60, 180, 300):
        assert ((t >= edge - 0.1) & (t < edge)).sum() == 100
        assert ((t >= edge) & (t < edge + 0.1)).sum() == 100


def test_edge_hunt_shape():
    a = build_model("edge_hunt", 100, 60, seed=1, overrides={"rounds": "2"}).arrivals()
    t, keys = np.array(a.t), np.array(a.key)
    assert len(t) == 800
    for i, start in enumerate((0, 240)):
        first, clock = t[keys == f"hunt-first-{i}"], t[keys == f"hunt-clock-{i}"]
        # the opener half a window after a clock edge, 99 just before its own edge, 100 just after
        assert first[0] == start + 30 and list(np.unique(first[1:], return_counts=True)[1]) == [99, 100]
        assert np.unique(first[1:]).tolist() == [start + 89.95, start + 90.05]
        assert np.unique(clock, return_counts=True)[1].tolist() == [100, 100]
        assert np.unique(clock).tolist() == [start + 179.95, start + 180.05]


def test_page_load_shape():
    p = {"users": "1", "abusers": "0", "duration_s": "60"}
    a = build_model("page_load_burst", 100, 60, seed=1, overrides=p).arrivals()
    t = np.array(a.t)
    first = t[:8]
    assert first.max() - first.min() <= 0.005  # 8 parallel requests
    assert np.allclose(t[8:11] - first.min(), [1, 2, 3], atol=0.005)  # follow-ups
    assert t[11] - t[10] >= 5.0  # think time


def test_drip_reacts_to_retry_after():
    m = build_model("adversarial_drip", 10, 1.0, seed=1)
    drip = Request(1.0, "attacker-drip", "abusive", "attacker", "GET /api/items", 1.0)

    class D:
        def __init__(self, allowed, retry):
            self.allowed, self.retry_after_s = allowed, retry

    assert [r.t for r in m.react(drip, D(False, 0.25))] == [1.25]
    assert [r.t for r in m.react(drip, D(True, 0.0))] == [1.001]
    assert list(m.react(drip._replace(client_id="attacker-burst"), D(False, 0.25))) == []
    assert list(m.react(drip, D(False, float("inf")))) == []


@pytest.mark.parametrize(
    ("name", "overrides", "message"),
    [
        ("steady", {"clients": "0"}, "clients=0: out of bounds, must be between 1 and 100,000"),
        ("page_load_burst", {"page_size": "-1"}, "page_size=-1: out of bounds, must be between 1 and 1,000"),
        ("cost_mix", {"expensive_share": "2"}, "expensive_share=2.0: out of bounds, must be between 0 and 1"),
        ("boundary_burst", {"delta_s": "120"}, "delta_s must be shorter than the window"),
        ("edge_hunt", {"delta_s": "30"}, "delta_s must be shorter than half the window"),
        ("steady", {"speed": "1"}, "unknown scenario parameter 'speed'"),
        ("steady", {"load": "lots"}, "expected a number"),
    ],
)
def test_bad_parameters_name_the_parameter(name, overrides, message):
    with pytest.raises(ScenarioError, match=message):
        build_model(name, 100, 60, overrides=overrides)
