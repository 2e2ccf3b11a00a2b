"""The downstream's health phases that break adaptive limiters, computed by hand."""

from __future__ import annotations

import pytest

from targets.config import DownstreamConfig, Phase
from targets.downstream import Downstream
from targets.downstream_phases import call_duration, paused_duration

approx = pytest.approx


def test_paused_calls_wait_out_and_absorb_the_pauses():
    # pauses [0, 0.1), [1, 1.1), [2, 2.1) ... (period 1 s, pause 100 ms)
    assert paused_duration(0.05, 0.02, 1.0, 0.1) == approx(0.07)   # waits to 0.1, done 0.12
    assert paused_duration(0.5, 0.02, 1.0, 0.1) == approx(0.02)    # between pauses
    assert paused_duration(0.99, 0.02, 1.0, 0.1) == approx(0.12)   # 0.01 done, pause, 0.01: ends 1.11
    assert paused_duration(0.5, 1.5, 1.0, 0.1) == approx(1.7)      # spans two pauses: 0.5+0.9, 1.1..2.0, 2.1..2.2


def test_stuck_degraded_and_healthy_durations():
    assert call_duration("stuck", 0.02, 3.0, latency_ms=1000) == 1.0
    assert call_duration("degraded", 0.02, 3.0, factor=5) == approx(0.1)
    assert call_duration("recovered", 0.02, 3.0) == 0.02


def test_the_live_downstream_follows_the_schedule_phases(monkeypatch):
    config = DownstreamConfig(concurrency=1, service_time={"median_ms": 20, "sigma": 0}, schedule=[
        {"at_s": 0, "health": "healthy"}, {"at_s": 10, "health": "stuck", "latency_ms": 900},
        {"at_s": 20, "health": "paused", "period_s": 2, "pause_ms": 500}, {"at_s": 30, "health": "recovered"}])
    downstream = Downstream(config, start_at=1000.0)
    for t, expected in [(1005.0, 0.02), (1015.0, 0.9), (1020.2, 0.32), (1021.0, 0.02), (1035.0, 0.02)]:
        monkeypatch.setattr("targets.downstream.time.time", lambda t=t: t)
        assert downstream.service_time() == approx(expected)


def test_a_pause_as_long_as_its_period_is_refused():
    with pytest.raises(ValueError, match="pause_ms"):
        Phase(at_s=0, health="paused", period_s=0.1, pause_ms=100)


def test_downstream_breaks_schedules_are_plain_downstream_config():
    from scenarios import build_model

    for kind, health in [("timeout", "stuck"), ("overload", "healthy"), ("gc_pauses", "paused"),
                         ("step", "degraded"), ("errors", "outage")]:
        model = build_model("downstream_breaks", 100, 1.0, 3, {"kind": kind})
        config = DownstreamConfig.model_validate(model.target_config()["downstream"])
        phases = [p.health for p in config.schedule]
        assert phases == (["healthy", health] if kind == "step" else ["healthy", health, "recovered"])
    # overload: 0.5 x capacity outside the break, 1.1 x inside; capacity = 8 / (20 ms x e^0.045)
    model = build_model("downstream_breaks", 100, 1.0, 3, {"kind": "overload", "sigma": "0"})
    times = model.generate().t
    assert model.p.capacity_rps == approx(400.0)
    assert sum(1 for t in times if 2 <= t < 6) == approx(4 * 440, rel=0.1)
    assert sum(1 for t in times if t < 2) == approx(2 * 200, rel=0.15)
