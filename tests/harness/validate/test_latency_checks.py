"""validate's latency checks: a policy that declares its downstream gets P99 at its peak and the
highest rate under its bound, from the system model of virtual time, with the slots that fix a failure."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.campaign.config_file import CampaignError
from harness.campaign.policy_file import parse_policy
from harness.validate.latency import run_latency_checks

GOOD = Path(__file__).parents[3] / "campaigns" / "policies" / "good.yaml"


def policy_with(downstream: dict):
    raw = yaml.safe_load(GOOD.read_text())
    raw["downstream"] = downstream
    return parse_policy(raw, "policy.yaml")


def test_a_downstream_too_small_for_the_peak_fails_with_the_slots_that_fix_it():
    # 150/s from 20 users (7.5/s each, under the api limit of 10/s each) into 2 slots x 20 ms (~90/s)
    p99, sustained = run_latency_checks(policy_with({"concurrency": 2, "median_ms": 20, "peak_rps": 150}))
    assert not p99.passed and p99.value > 1000  # the queue grows for the whole run
    assert not sustained.passed and sustained.value < 150
    assert "slots instead of 2" in p99.suggestion and p99.suggestion == sustained.suggestion
    slots = int(p99.suggestion.split("give the downstream ")[1].split()[0])
    assert 3 <= slots <= 8
    fixed = run_latency_checks(policy_with({"concurrency": slots, "median_ms": 20, "peak_rps": 150}))
    assert fixed[0].passed  # the suggested slots do keep P99 at the peak under the bound


def test_a_downstream_with_room_passes_and_the_limit_keeps_p99_bounded_past_the_peak():
    p99, sustained = run_latency_checks(policy_with({"concurrency": 16, "median_ms": 20, "peak_rps": 150}))
    assert p99.passed and p99.value < 100 and p99.suggestion is None
    assert sustained.passed and sustained.value >= 150


def test_no_downstream_declared_no_latency_check():
    assert run_latency_checks(parse_policy(yaml.safe_load(GOOD.read_text()), "policy.yaml")) == []


@pytest.mark.parametrize(("field", "value"), [("concurrency", 0), ("median_ms", -1), ("peak_rps", 0)])
def test_a_downstream_it_cannot_honour_is_refused_naming_the_field(field, value):
    ds = {"concurrency": 4, "median_ms": 20, "peak_rps": 100, field: value}
    with pytest.raises(CampaignError, match=f"downstream.{field}"):
        policy_with(ds)
