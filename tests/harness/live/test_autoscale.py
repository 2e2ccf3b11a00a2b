"""``scale: {auto: true}`` (harness/live/autoscale.py): the workers, processes and connection cap
for a plan's peak on a machine's cores, hand-computed from the measured costs of a request."""

from __future__ import annotations

import pytest

from harness.campaign.live import Campaign
from harness.live.autoscale import GENERATOR_US, PROCESS_CORE, WORKER_CORE, apply, choose, peak_rps


def test_a_peak_that_fits_gets_what_it_needs():
    # 50,000/s: generator 50,000 x 45 us = 2.25 cores / 0.7 = 3.2 -> 4 workers; target x 118 us =
    # 5.9 cores / 0.7 = 8.43 -> 9 processes; 4 + 9 + the master = 14 of 16 cores
    c = choose(16, 50_000, 118.0)
    assert (c.workers, c.processes, c.fits) == (4, 9, True)
    assert (c.generator_cores, c.target_cores) == (2.25, 5.9)
    assert c.max_connections == 5556  # 50,000 in flight for a second over 9 processes


def test_a_peak_past_the_machine_gets_the_split_that_holds_the_highest_rate():
    # 60,000/s needs 4 workers and 11 processes: 16 cores with the master. Of the splits of 12,
    # 3 workers + 8 processes hold min(3 x 0.7 / 45 us, 8 x 0.7 / 118 us) = min(46,667, 47,458)/s,
    # more than 2 + 9 (31,111/s, the generator's) or 4 + 7 (41,525/s, the target's)
    c = choose(12, 60_000, 118.0)
    assert (c.workers, c.processes, c.fits) == (3, 8, False)
    assert c.capacity_rps() == pytest.approx(min(3 * WORKER_CORE / GENERATOR_US, 8 * PROCESS_CORE / 118.0) * 1e6)
    assert round(c.capacity_rps()) == 46_667
    assert "past about 46,667/s the machine, not the limiter, sets the ceiling" in c.said()
    assert choose(16, 60_000, 118.0).fits  # 4 + 11 + the master


def test_one_worker_needs_no_master_and_small_plans_keep_the_defaults():
    c = choose(2, 2_500, 118.0)  # 0.11 and 0.30 cores
    assert (c.workers, c.processes, c.fits, c.max_connections) == (1, 1, True, 4096)
    c = choose(4, 60_000, 118.0)  # 1 worker (15,556/s) + 3 processes beats 2 + 1 with the master (5,932/s)
    assert (c.workers, c.processes) == (1, 3)


def test_the_connection_cap_stays_under_the_open_file_limit():
    assert choose(16, 50_000, 118.0, fd_limit=2048).max_connections == 2048 - 256


RAMP = {"name": "ramp", "params": {"start_rps": 1000, "end_rps": 5000, "duration_s": 4, "clients": 10}}


def _campaign(**extra) -> Campaign:
    return Campaign.model_validate({"name": "c", "policy": {"limit": 100, "window_s": 1}, "algorithms": ["token_bucket"],
                                    "scenarios": [RAMP], **extra})


def test_the_peak_is_the_busiest_second_of_the_plan():
    # a linear ramp of 1,000 -> 5,000/s over 4 s: its last second offers 5,000 - 4,000 / 4 / 2 = 4,500
    assert peak_rps(_campaign()) == pytest.approx(4_500, abs=2)


def test_what_the_file_gives_stays_and_the_rest_is_chosen():
    chosen, choice = apply(_campaign(scale={"auto": True}), 16)
    assert (chosen.processes, chosen.scale.workers) == (choice.processes, choice.workers) == (1, 1)
    given, choice = apply(_campaign(processes=3, scale={"auto": True, "workers": 2, "max_connections": 100}), 16)
    assert (given.processes, given.scale.workers, given.scale.max_connections) == (3, 2, 100)
    assert (choice.processes, choice.workers, choice.max_connections) == (3, 2, 100)

