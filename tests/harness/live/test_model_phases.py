"""run.json's phases from a model's plan: every unhealthy health of the downstream schedule has
a phase, and an overload break (a healthy downstream, too much traffic) its window."""

from __future__ import annotations

import pytest

from harness.live.measures import model_phases
from scenarios import build_model

START, END = 1000.0, 1008.0


@pytest.mark.parametrize("kind, name, end", [
    ("timeout", "downstream_stuck", START + 6),
    ("gc_pauses", "downstream_paused", START + 6),
    ("step", "degraded", END),            # never recovers: to the end of the run
    ("errors", "downstream_outage", START + 6),
    ("overload", "overload", START + 6),
])
def test_every_break_of_downstream_breaks_is_a_phase(kind, name, end):
    model = build_model("downstream_breaks", 10, 1.0, 0, {"kind": kind})
    assert model_phases(model, START, END) == [{"name": name, "start_t": START + 2, "end_t": end}]


def test_a_ramp_keeps_its_span():
    model = build_model("ramp", 10, 1.0, 0, {})
    begin, finish = model.ramp()
    assert model_phases(model, START, END) == [{"name": "ramp", "start_t": START + begin, "end_t": START + finish}]
