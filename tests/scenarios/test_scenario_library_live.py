"""The scenario library live: closed-loop retries, a downstream outage and forged headers against
real targets and Locust, through the campaign runner (two short campaigns: the backoff
comparison in about 20 s, the rest in about 40 s)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from scenarios import build_model
from scenarios.live_plan import origin_of

pytestmark = pytest.mark.process  # every test here starts processes

ROOT = Path(__file__).resolve().parents[2]
STORM_POLICY = {"limit": 100, "window_s": 1, "burst": 5}
"""A tight bucket: 5 tokens, refilled at 100/s. Between two lockstep waves (0.3 s and more apart)
it refills far more than it can hold, so a herd retrying in lockstep wastes most of the refill."""
STORM = {"clients": 100, "base_s": 0.3, "cap_s": 1, "deadline_s": 4, "max_attempts": 12}
"""base_s far above the target's response times (~10 ms for the whole herd here): live, the
lockstep waves stay waves. Virtual: exponential 525 calls (30 served), full jitter 296 (all 100)."""
STORM_CAMPAIGN = {
    "name": "storm", "seed": 1, "policy": STORM_POLICY, "algorithms": ["token_bucket"],
    "scenarios": [{"name": "retry_storm", "label": b, "params": {"backoff": b, **STORM}}
                  for b in ("exponential", "full_jitter")],
    "scale": {"workers": 1, "lead_s": 2.5, "drain_s": 0.5},
    "downstream": {"concurrency": 16, "median_ms": 2, "sigma": 0.3},
}
OUTAGE_S = 1.0
OUTAGE = {**STORM, "backoff": "full_jitter", "trigger": "outage", "outage_s": OUTAGE_S}
KEYS = {"duration_s": 3}
RAMP = {"start_rps": 20, "end_rps": 100, "duration_s": 3}
LIBRARY_CAMPAIGN = {
    **STORM_CAMPAIGN, "name": "library",
    "scenarios": [
        {"name": "retry_storm", "label": "none", "params": {"backoff": "none", **STORM}},
        # a bucket that holds the whole herd: every first try is admitted, and answered 503
        {"name": "retry_storm", "label": "outage", "policy": {"limit": 100, "window_s": 1}, "params": OUTAGE},
    ] + [
        {"name": "key_evasion", "label": k, "policy": {"limit": 10, "window_s": 1}, "params": {"key_policy": k, **KEYS}}
        for k in ("leftmost_xff", "ipv6_64")
    ] + [
        # a short ramp under a limit it never reaches: every bin is the line, the whole ramp is measured
        {"name": "ramp", "policy": {"limit": 1000, "window_s": 1}, "params": RAMP},
        # the drip: each admission followed by a new request, each refusal by a retry at Retry-After
        {"name": "adversarial_drip", "policy": {"limit": 5, "window_s": 1}, "params": {"duration_s": 3.5}},
    ],
}


def run_campaign(root: Path, campaign: dict) -> Path:
    path = root / f"{campaign['name']}.yaml"
    path.write_text(yaml.safe_dump(campaign))
    out = root / "res"
    proc = subprocess.run([sys.executable, "run_bench.py", "run", str(path), "--out", str(out), "--no-charts"], cwd=ROOT,
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def storm(tmp_path_factory) -> Path:
    return run_campaign(tmp_path_factory.mktemp("storm"), STORM_CAMPAIGN)


@pytest.fixture(scope="module")
def library(tmp_path_factory) -> Path:
    return run_campaign(tmp_path_factory.mktemp("library"), LIBRARY_CAMPAIGN)


def rows(results: Path) -> dict[str, dict]:
    return {r["scenario"]: r for r in json.loads((results / "summary.json").read_text())["runs"]}


def client_log(results: Path, run: str) -> pd.DataFrame:
    return pd.read_parquet(results / "runs" / f"{run}__token_bucket__memory" / "client.parquet", filters=[("role", "==", "plan")])


def test_a_retry_storm_over_real_http_amplifies_and_full_jitter_serves_everyone(storm):
    """With a base delay far above the target's response times, plain exponential backoff keeps
    its herd in lockstep over real HTTP too: each wave meets a bucket that can hold only 5 of
    the tokens refilled since the last one, so it makes more calls than requests. Full jitter
    spreads the retries over the refill and every request is served. That jitter makes fewer
    calls, sooner, is exact in virtual time (tests/scenarios/test_scenario_library.py); live it
    is a timing comparison the campaigns measure (docs/scenarios.md has the figures), not asserted
    here, where other test files share the cores."""
    r = rows(storm)
    jitter, lockstep = r["retry_storm-full_jitter"], r["retry_storm-exponential"]
    assert jitter["completed_requests"] == 100
    assert lockstep["amplification"] > 1 and jitter["calls"] > 100


def test_retrying_at_once_makes_the_most_calls_live(storm, library):
    immediate = rows(library)["retry_storm-none"]
    for backoff in ("exponential", "full_jitter"):
        assert rows(storm)[f"retry_storm-{backoff}"]["calls"] < immediate["calls"]
    assert immediate["completed_requests"] < rows(storm)["retry_storm-full_jitter"]["completed_requests"]


def test_retries_are_logged_as_attempts_of_one_request(storm):
    client = client_log(storm, "retry_storm-exponential")
    assert client["request_id"].nunique() == 100 and client["attempt"].max() > 2
    assert set(client["status"]) <= {200, 429}
    per_request = client.groupby("request_id")["attempt"].agg(["max", "size"])
    assert (per_request["max"] == per_request["size"]).all()  # attempts 1..k, none lost
    run = storm / "runs" / "retry_storm-exponential__token_bucket__memory"
    assert json.loads((run / "run.json").read_text())["scenario_params"]["backoff"] == "exponential"


def test_clients_get_503_during_an_outage_and_retry(library):
    client = client_log(library, "retry_storm-outage").sort_values(["request_id", "attempt"])
    start_at = client.loc[client["attempt"] == 1, "intended_t"].min()  # the plan's t = 0: the outage starts
    failed = client.loc[client["status"] == 503]
    # the first tries were admitted (the bucket holds the herd) and failed at once; one refused
    # instead was sent after other requests' retries had spent its token (a busy client); no 503 after the outage
    first = client.loc[client["attempt"] == 1]
    assert (first["status"] == 503).sum() > len(first) / 2 and first["status"].isin([503, 429]).all()
    assert (first.loc[first["status"] == 429, "sent_t"] > client.loc[client["attempt"] > 1, "sent_t"].min()).all()
    assert (failed["sent_t"] < start_at + OUTAGE_S + 0.05).all()
    # each request was retried until served: attempts 1..k, the last one a 200, every earlier one refused
    per_request = client.groupby("request_id")
    assert (per_request["attempt"].max() == per_request.size()).all()
    assert (per_request["status"].last() == 200).all() and client["request_id"].nunique() == 100
    assert set(client.loc[client.duplicated("request_id", keep="last"), "status"]) <= {429, 503}
    # the limiter admitted each 503 (it spent a token) during the outage; what it admitted then and
    # the downstream served after the end (a busy target) got 200; the summary counts every retry
    decisions = pd.read_parquet(library / "runs" / "retry_storm-outage__token_bucket__memory" / "decisions.parquet")
    decisions["attempt"] = decisions.sort_values("t").groupby("request_id").cumcount() + 1  # one decision an attempt
    answered = decisions.merge(client[["request_id", "attempt", "status"]], on=["request_id", "attempt"], validate="1:1")
    assert len(answered) == len(decisions) == len(client)
    five_hundreds = answered.loc[answered["status"] == 503]
    assert five_hundreds["allowed"].all() and (five_hundreds["t"] < start_at + OUTAGE_S + 0.01).all()
    in_outage = answered.loc[answered["allowed"] & (answered["t"] < start_at + OUTAGE_S)]
    assert set(in_outage["status"]) <= {200, 503} and (in_outage["status"] == 503).sum() >= len(failed) - 1
    summary = rows(library)["retry_storm-outage"]
    assert summary["calls"] == len(client) > 100 and summary["amplification"] > 1
    assert summary["completed_requests"] == 100
    info = json.loads((library / "runs" / "retry_storm-outage__token_bucket__memory" / "run.json").read_text())
    [phase] = info["phases"]
    assert phase["name"] == "downstream_outage" and phase["end_t"] - phase["start_t"] == pytest.approx(OUTAGE_S)


def admitted(results: Path, label: str, prefix: str) -> tuple[int, float]:
    """How many of a client's requests the limiter admitted, and the most a bucket of 10 refilled
    at 10/s admits in the span of that client's decisions, on the limiter's own times."""
    d = pd.read_parquet(results / "runs" / f"key_evasion-{label}__token_bucket__memory" / "decisions.parquet")
    d = d.loc[d["client_id"].str.startswith(prefix)]
    return int(d["allowed"].sum()), 10 + 10 * (d["t"].max() - d["t"].min())


def test_forged_xff_and_ipv6_rotation_live(library):
    forged, bound = admitted(library, "leftmost_xff", "forger")
    assert forged > 2 * bound  # each forged address a bucket of its own
    for prefix in ("forger", "rotator"):  # an IPv6 /64 is one key, however its addresses rotate
        count, bound = admitted(library, "ipv6_64", prefix)
        assert count <= bound


def test_a_ramp_live_records_its_span_and_is_binned_by_offered_rate(library):
    run = library / "runs" / "ramp__token_bucket__memory"
    info = json.loads((run / "run.json").read_text())
    ramp = next(p for p in info["phases"] if p["name"] == "ramp")
    assert ramp["start_t"] == info["start_at"] and ramp["end_t"] == info["start_at"] + 3
    assert info["sent"] == info["planned_requests"] == 180  # (20 + 100) / 2 x 3 s
    model = build_model("ramp", 1000, 1, seed=1, overrides={k: str(v) for k, v in RAMP.items()})
    planned = np.bincount(np.floor(model.arrivals().t).astype(int))
    assert planned.tolist() == [33, 61, 86]  # the line's 33.3, 60 and 86.7, within the two units at each end
    row = rows(library)["ramp"]
    assert (row["ramp_offered_min_rps"], row["ramp_offered_max_rps"]) == (33.0, 86.0)
    assert row["ramp_sustained_rps"] in (0.0, *planned) and row["ramp_p99_bound_ms"] == 100.0


def test_the_drips_follow_ups_keep_their_origins_key_class_and_id(library):
    """A follow-up the plan never had (the drip's next request) is sent with its origin's key and
    class headers, and its id names its origin (``r<i>.<n>``): joined with the plan by
    ``origin_of``, no follow-up is unplanned. Judged on what the target logged."""
    run = library / "runs" / "adversarial_drip__token_bucket__memory"
    model = build_model("adversarial_drip", 5, 1, seed=1, overrides={"duration_s": "3.5"})
    planned = {f"r{i}": r for i, r in enumerate(model.arrivals().requests())}
    client = pd.read_parquet(run / "client.parquet", filters=[("role", "==", "plan")])
    follow_ups = client.loc[client["request_id"].str.contains(".", regex=False)]
    assert len(follow_ups) >= 2 and set(follow_ups["request_id"].map(origin_of)) <= set(planned)
    decisions = pd.read_parquet(run / "decisions.parquet")
    followed = decisions.loc[decisions["request_id"].isin(set(follow_ups["request_id"]))]
    assert len(followed) == len(follow_ups)  # every follow-up reached the limiter and was logged
    for rid, key, client_class, client_id in zip(followed["request_id"], followed["key"], followed["client_class"],
                                                 followed["client_id"]):
        origin = planned[origin_of(rid)]
        assert (client_id, client_class) == (origin.client_id, origin.client_class) and origin.key in key
