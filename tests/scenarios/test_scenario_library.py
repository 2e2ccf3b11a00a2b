"""The scenario library in virtual time: retry storms, key evasion, idempotency, bad parameters."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import httpx
import pandas as pd
import pytest
from fastapi import FastAPI

from harness.campaign.live import Campaign
from harness.sim.runner import attempt_log
from harness.sim.simulator import outage_windows, simulate
from scenarios import ScenarioError, build_model
from scenarios.backoff import delays
from scenarios.base import Request
from scenarios.key_evasion import KEY_POLICIES
from scenarios.live_plan import outcome, request_headers, retry_hint
from targets.algorithms import Policy, build_params
from targets.algorithms.base import decided_at
from targets.app import create_app
from targets.config import KeyConfig, load
from targets.keys import KeyPolicy

T = TypeVar("T")

ROOT = Path(__file__).resolve().parents[2]
POLICY = Policy(10, 1.0, None)


def run(scenario: str, **params: str):
    model = build_model(scenario, POLICY.limit, POLICY.window_s, 1, params)
    table, _ = simulate(model, "token_bucket", POLICY, build_params("token_bucket", POLICY))
    return table.to_pandas()


def test_backoff_formulas_by_hand():
    u = [0.5, 0.5, 0.5, 0.5]
    assert delays("none", 0.1, 1.0, u) == [0, 0, 0, 0]
    assert delays("fixed", 0.1, 1.0, u) == [0.1] * 4
    assert delays("exponential", 0.1, 0.5, u) == pytest.approx([0.1, 0.2, 0.4, 0.5])
    assert delays("full_jitter", 0.1, 0.5, u) == pytest.approx([0.05, 0.1, 0.2, 0.25])
    assert delays("equal_jitter", 0.1, 0.5, u) == pytest.approx([0.075, 0.15, 0.3, 0.375])
    # min(cap, uniform(base, prev * 3)), prev starting at base
    assert delays("decorrelated", 0.1, 0.5, u) == pytest.approx([0.2, 0.35, 0.5, 0.5])


def test_full_jitter_makes_fewer_calls_than_no_jitter():
    calls = {b: len(run("retry_storm", backoff=b)) for b in ("none", "exponential", "full_jitter")}
    assert calls["full_jitter"] < calls["exponential"] < calls["none"]


def replay_storm(**params: str):
    model = build_model("retry_storm", POLICY.limit, POLICY.window_s, 1, params)
    return simulate(model, "token_bucket", POLICY, build_params("token_bucket", POLICY))[1]


def test_outage_answers_admissions_503_and_the_clients_retry():
    result = replay_storm(trigger="outage", outage_at_s="0.5", outage_s="1", spread_s="1", backoff="exponential")
    log = attempt_log(result).assign(t=result.arrivals.t, client=result.arrivals.client_id)
    inside = (log["t"] >= 0.5) & (log["t"] < 1.5)
    # exactly the admissions inside the window failed; before and after it they were served
    assert log.loc[inside & pd.Series(result.allowed), "status"].eq(503).all()
    assert (log["status"] == 503).sum() == (inside & pd.Series(result.allowed)).sum() > 0
    assert log.loc[~inside & pd.Series(result.allowed), "status"].eq(200).all()
    # each failed attempt is followed by the same request's next attempt, and everyone is served
    for row in log.loc[log["status"] == 503].itertuples():
        later = log.loc[(log["client"] == row.client) & (log["attempt"] == row.attempt + 1)]
        assert len(later) == 1 and later["t"].iloc[0] > row.t
    assert log.groupby("request_id")["status"].last().eq(200).all()


def test_full_jitter_makes_fewer_calls_than_no_jitter_in_an_outage():
    calls = {b: len(replay_storm(trigger="outage", backoff=b).arrivals) for b in ("none", "exponential", "full_jitter")}
    assert calls["full_jitter"] < calls["exponential"] < calls["none"]


def test_the_outage_is_the_targets_health_schedule():
    model = build_model("retry_storm", 10, 1.0, 1, {"trigger": "outage", "outage_at_s": "2", "outage_s": "0.5"})
    config = load(None, {"routes": {"reports": {"cost": 1}}, **model.target_config()})
    assert [(p.at_s, p.health) for p in config.downstream.schedule] == [
        (0, "healthy"), (2, "outage"), (2.5, "recovered")]
    assert outage_windows(model) == [(2.0, 2.5)]
    burst = build_model("retry_storm", 10, 1.0, 1, {})
    assert "downstream" not in burst.target_config() and replay_storm().unavailable is None


def test_retry_storm_respects_max_attempts_and_retry_after():
    df = run("retry_storm", backoff="none", max_attempts="3")
    assert df.groupby("client_id").size().max() == 3
    model = build_model("retry_storm", 10, 1.0, 1, {"backoff": "fixed", "honour_retry_after": "1"})
    first = Request(0.0, "client-0", "legit", "storm-app", "POST /api/reports", 1.0)
    refused = outcome(429, {"retry-after": "2"})
    assert [(r.t, r.attempt) for r in model.react(first, refused)] == [(2.0, 2)]
    assert list(model.react(first, outcome(200, {}))) == []


def admitted(df, prefix: str) -> int:
    return int(df.loc[df["client_id"].str.startswith(prefix), "allowed"].sum())


def test_forged_xff_buys_quota_only_when_the_leftmost_entry_is_trusted():
    bound = 10 * 5 + 10  # L per second over 5 s, plus the burst
    leftmost, trusted = run("key_evasion", key_policy="leftmost_xff"), run("key_evasion", key_policy="trusted_proxy")
    assert admitted(leftmost, "forger") > 2 * bound
    assert admitted(trusted, "forger") <= bound


def test_ipv6_rotation_inside_a_64_is_held_by_prefix_aggregation():
    bound = 10 * 5 + 10
    assert admitted(run("key_evasion", key_policy="trusted_proxy"), "rotator") > 2 * bound
    assert admitted(run("key_evasion", key_policy="ipv6_64"), "rotator") <= bound


def test_nat_users_share_a_quota_unless_they_send_api_keys():
    by_ip, by_key = run("key_evasion", key_policy="ipv6_64"), run("key_evasion", key_policy="api_key")
    nat = by_ip["client_id"].str.startswith("nat-user")
    assert (~by_ip.loc[nat, "allowed"]).sum() > 0
    assert by_key.loc[by_key["client_id"].str.startswith("nat-user"), "allowed"].all()


@pytest.mark.parametrize("key_policy", list(KEY_POLICIES))
def test_the_simulator_counts_each_request_by_the_key_the_target_derives(key_policy):
    model = build_model("key_evasion", 10, 1.0, 1, {"key_policy": key_policy, "duration_s": "1"})
    trusted, prefix = KEY_POLICIES[key_policy]
    target = KeyPolicy(KeyConfig(trusted_proxies=trusted, ipv6_prefix=prefix))
    a = model.arrivals()
    assert set(a.key) == {""}  # the model leaves keys to the target's code
    table, _ = simulate(model, "token_bucket", POLICY, build_params("token_bucket", POLICY))
    df = table.to_pandas()
    expected = {}
    for t, client_id, headers in zip(a.t, a.client_id, a.headers):
        scope = {"headers": [(k.encode(), v.encode()) for k, v in headers.items()], "client": ("127.0.0.1", 1)}
        expected[decided_at(t), client_id] = target.identify(scope).client  # the log's t: the µs decided at
    assert len(df) == len(expected)
    assert [expected[t, c] for t, c in zip(df["t"], df["client_id"])] == df["key"].tolist()


def test_virtual_keys_by_hand():
    def keys(key_policy: str, prefix: str) -> set[str]:
        df = run("key_evasion", key_policy=key_policy, duration_s="1")
        return set(df.loc[df["client_id"].str.startswith(prefix), "key"])

    assert keys("ip_only", "") == {"ip:127.0.0.1"}  # everyone is the proxy
    assert keys("trusted_proxy", "forger") == {"ip:192.0.2.66"}
    assert len(keys("leftmost_xff", "forger")) > 5  # a fresh forged address per request
    assert len(keys("trusted_proxy", "rotator")) > 5
    assert keys("ipv6_64", "rotator") == {"ip:2001:db8:66::/64"}
    assert keys("ipv6_64", "nat-user") == {"ip:198.51.100.7"}
    assert keys("api_key", "nat-user-0") == {"api_key:key-nat-user-0"}


def in_process(app: FastAPI, calls: Callable[[httpx.AsyncClient], Awaitable[T]]) -> T:
    """``calls`` against the app in this process, inside its lifespan (httpx's ASGI transport)."""
    async def run() -> T:
        transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 4000))
        async with app.router.lifespan_context(app), httpx.AsyncClient(transport=transport, base_url="http://target") as client:
            return await calls(client)

    return asyncio.run(run())


def test_an_outage_answers_503_at_once_and_a_retry_runs_again_after_it():
    config = load(None, {"routes": {"reports": {"cost": 1}},
                         "downstream": {"service_time": {"median_ms": 0}, "schedule": "0:outage,60:recovered"}})
    app = create_app(config)

    async def calls(client: httpx.AsyncClient) -> tuple[httpx.Response, httpx.Response]:
        down = await client.post("/api/reports", headers={"idempotency-key": "k1"})
        app.state.target.downstream.start_at -= 120  # two minutes later: recovered
        return down, await client.post("/api/reports", headers={"idempotency-key": "k1"})

    down, up = in_process(app, calls)
    counters = app.state.target.downstream.counters
    assert down.status_code == 503 and "retry-after" not in down.headers
    assert up.status_code == 200 and up.headers.get("idempotent-replayed") is None  # a 503 is not replayed
    assert (counters.failed, counters.calls) == (1, 1)  # the failure did no downstream work
    assert app.state.target.metrics.count("per-client")[0] == 2  # both were limiter decisions


def test_retried_posts_with_one_idempotency_key_execute_once():
    config = load(None, {"routes": {"reports": {"cost": 1}}, "downstream": {"service_time": {"median_ms": 0}}})
    app = create_app(config)

    async def calls(client: httpx.AsyncClient) -> tuple[list[httpx.Response], httpx.Response]:
        answers = [await client.post("/api/reports", headers={"idempotency-key": "k1"}) for _ in range(3)]
        return answers, await client.post("/api/reports", headers={"idempotency-key": "k2"})

    answers, other = in_process(app, calls)
    target = app.state.target
    assert [a.status_code for a in answers] == [200, 200, 200] and other.status_code == 200
    assert [a.headers.get("idempotent-replayed") for a in answers] == [None, "true", "true"]
    assert target.downstream.counters.calls == 2  # one execution per key
    assert target.metrics.count("per-client")[0] == 4  # every retry is still a decision


def test_live_requests_carry_explicit_headers_and_an_idempotency_key():
    post = Request(0.0, "c", "legit", "k", "POST /api/reports", 1.0)
    assert request_headers(post, "r1")["idempotency-key"] == "r1" and request_headers(post, "r1")["x-api-key"] == "k"
    forged = post._replace(route="GET /api/items", headers={"x-forwarded-for": "1.2.3.4, 5.6.7.8"})
    h = request_headers(forged, "r2")
    assert h["x-forwarded-for"] == "1.2.3.4, 5.6.7.8" and "x-api-key" not in h and "idempotency-key" not in h
    # a run in a fresh address block sends its API keys after the run's prefix, explicit ones too
    assert request_headers(post, "r1", "b3-")["x-api-key"] == "b3-k"
    keyed = forged._replace(headers={"x-forwarded-for": "1.2.3.4", "x-api-key": "key-u1"})
    assert request_headers(keyed, "r3", "b3-")["x-api-key"] == "b3-key-u1" and "x-api-key" not in request_headers(forged, "r2", "b3-")


def test_answers_become_decisions():
    assert outcome(200, {}).allowed and outcome(404, {}) is None and outcome(0, {}) is None
    assert not outcome(503, {}).allowed
    assert retry_hint({"retry-after": "3"}) == 3.0
    assert retry_hint({"ratelimit": '"a";r=0;t=7, "b";r=0;t=2'}) == 2.0
    assert retry_hint({}) == float("inf")


@pytest.mark.parametrize(("param", "message"), [("clients=0", "clients=0: out of bounds, must be between 1 and 100,000"),
                                                  ("base_s=-0.1", "base_s=-0.1: out of bounds, must be > 0 and <= 2,678,400"),
                                                  ("backoff=sometimes", "backoff='sometimes': choose from: none, fixed"),
                                                  ("trigger=flood", "trigger='flood': choose from: burst, outage"),
                                                  ("outage_s=0", "outage_s=0.0: out of bounds, must be > 0 and <= 2,678,400"),
                                                  ("outage_s=2", "outage_s needs trigger=outage")])
@pytest.mark.process
def test_out_of_range_parameters_exit_2_naming_the_parameter(param, message):
    proc = subprocess.run([sys.executable, "run_bench.py", "simulate", "--scenario", "retry_storm",
                           "--scenario-param", param], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2
    assert message in proc.stderr and proc.stderr.count("\n") == 1


def test_outage_parameters_out_of_range_name_the_parameter():
    for params, message in (({"outage_at_s": "-1"}, "outage_at_s=-1.0: out of bounds"),
                            ({"outage_s": "inf"}, "outage_s='inf': expected a finite number")):
        with pytest.raises(ScenarioError, match=message):
            build_model("retry_storm", 10, 1.0, 1, {"trigger": "outage", **params})


def test_key_evasion_rejects_an_unknown_policy():
    with pytest.raises(ScenarioError, match="key_policy"):
        build_model("key_evasion", 10, 1.0, 1, {"key_policy": "guess"})


def test_campaign_entries_of_one_scenario_need_distinct_labels():
    base = {"name": "c", "policy": {"limit": 10, "window_s": 1}, "algorithms": ["token_bucket"]}
    twice = [{"name": "retry_storm", "params": {"backoff": b}} for b in ("exponential", "full_jitter")]
    with pytest.raises(ValueError, match="own label"):
        Campaign.model_validate({**base, "scenarios": twice})
    labelled = [{**s, "label": s["params"]["backoff"]} for s in twice]
    assert [s.run_name for s in Campaign.model_validate({**base, "scenarios": labelled}).scenarios] == [
        "retry_storm-exponential", "retry_storm-full_jitter"]
