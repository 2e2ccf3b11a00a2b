"""The ramp: the count in every second is the line's integral over it (within the two partial
units at its ends), exactly, for any rates, length and seed; a flat ramp puts one arrival in each
1/rate of time."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scenarios import ScenarioError, build_model


def _times(**params: object) -> np.ndarray:
    overrides = {k: str(v) for k, v in params.items() if k != "seed"}
    return np.array(build_model("ramp", 100, 1, seed=int(params.get("seed", 1)), overrides=overrides).arrivals().t)


@settings(max_examples=40, deadline=None)
@given(start=st.floats(0, 2000), end=st.floats(0, 2000), duration=st.integers(1, 20), seed=st.integers(0, 2**16))
def test_every_second_offers_the_rate_of_the_line(start: float, end: float, duration: int, seed: int) -> None:
    if start + end < 1:
        return
    t = _times(start_rps=start, end_rps=end, duration_s=duration, seed=seed)
    assert np.all(np.diff(t) >= 0) and t.min(initial=0) >= 0 and t.max(initial=0) < duration
    slope = (end - start) / duration
    for k in range(duration):
        line = start + slope * (k + 0.5)  # the integral of the line over [k, k + 1)
        got = int(((t >= k) & (t < k + 1)).sum())
        assert abs(got - line) < 2, (k, got, line)
    assert len(t) == int(np.floor((start + end) / 2 * duration + 1e-9))


def test_a_flat_ramp_puts_one_arrival_in_each_interval_of_one_over_the_rate() -> None:
    t = _times(start_rps=10, end_rps=10, duration_s=2)
    assert len(t) == 20
    assert np.array_equal(np.floor(t * 10 + 1e-9).astype(int), np.arange(20))


def test_hand_computed_ramp_from_0_to_4_per_second_over_2_s() -> None:
    # N(t) = t^2: arrival i lies in [sqrt(i), sqrt(i + 1)): 1 arrival in the first second, 3 in the second
    t = _times(start_rps=0, end_rps=4, duration_s=2)
    assert len(t) == 4
    for i, x in enumerate(t):
        assert np.sqrt(i) <= x < np.sqrt(i + 1)
    assert ((t < 1).sum(), (t >= 1).sum()) == (1, 3)


def test_seeded_and_keys() -> None:
    assert np.array_equal(_times(seed=3), _times(seed=3))
    assert not np.array_equal(_times(seed=3), _times(seed=4))
    shared = build_model("ramp", 100, 1, overrides={"clients": "5"}).arrivals()
    own = build_model("ramp", 100, 1, overrides={"clients": "5", "shared_key": "0"}).arrivals()
    assert set(shared.key) == {"ramp"} and len(set(shared.client_id)) == 5
    assert own.key == own.client_id


@pytest.mark.parametrize(("overrides", "message"), [
    ({"start_rps": "0", "end_rps": "0"}, "cannot both be 0"),
    ({"end_rps": "-1"}, "end_rps=-1.0: out of bounds, must be between 0 and 10,000,000"),
    ({"duration_s": "0"}, "duration_s=0.0: out of bounds, must be > 0 and <= 2,678,400"),
    ({"shared_key": "2"}, "shared_key='2': expected true or false"),
    ({"p99_bound_ms": "0"}, "p99_bound_ms=0.0: out of bounds, must be > 0 and <= 3,600,000"),
    ({"bin_s": "60"}, "bin_s (60.0) must not exceed duration_s"),
])
def test_bad_parameters_are_named(overrides: dict[str, str], message: str) -> None:
    with pytest.raises(ScenarioError, match=message.replace("(", r"\(").replace(")", r"\)")):
        build_model("ramp", 100, 1, overrides=overrides)
