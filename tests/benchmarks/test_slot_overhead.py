"""``run_bench.py bench slot-overhead``: the drain of a queued downstream and the overhead it implies."""

from __future__ import annotations

import pandas as pd
import pytest

from benchmarks.slot_overhead import CAMPAIGN, drain_rate, overhead_us, virtual
from harness.campaign.live import load_campaign


def test_the_drain_counts_answers_from_the_settled_queue_to_the_last_send():
    # sends over 0..3 s; answered at 0.5 (before the queue settles), 1.5, 2.0, 2.5, 3.5 (after the last
    # send), one refused at 2.2: three answers in [1, 3] -> 1.5 a second; no planned send: no drain
    client = pd.DataFrame({"intended_t": [0.0, 1.0, 2.0, 2.5, 3.0, 2.2],
                           "done_t": [0.5, 1.5, 2.0, 2.5, 3.5, 2.2],
                           "status": [200, 200, 200, 200, 200, 429], "role": ["plan"] * 6})
    assert drain_rate(client) == pytest.approx(1.5)
    assert drain_rate(client.assign(role="warm-up")) is None


def test_the_overhead_is_what_a_call_holds_beyond_its_service():
    # 8 slots of 10 ms drain 800/s; 8 / 0.0115 s = 695.65/s -> 1.5 ms a call
    assert overhead_us(800.0, 8, 0.010) == pytest.approx(0.0)
    assert overhead_us(8 / 0.0115, 8, 0.010) == pytest.approx(1500.0)
    assert overhead_us(None, 8, 0.010) is None


def test_the_model_with_the_overhead_drains_as_the_overhead_says(tmp_path):
    # the benchmark's own campaign in virtual time: a pure queue drains 800/s; 1,500 us a call, 8 / 11.5 ms
    campaign = load_campaign(CAMPAIGN)
    for overhead, expected in ((0.0, 800.0), (1500.0, 8 / 0.0115)):
        rates = virtual(campaign, overhead, tmp_path / str(overhead))
        assert len(rates) == 2
        assert all(rate == pytest.approx(expected, rel=0.01) for rate in rates.values())
