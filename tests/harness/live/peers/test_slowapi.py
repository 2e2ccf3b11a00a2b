"""The slowapi peers: a real slowapi app (limits' fixed window, moving window and sliding window
counter; memory and Redis storage) in front of a real ``none`` target, its recorded decisions
request by request, and the suite's mapped model beside them."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator

import httpx
import psutil
import pytest

from contract.schema import DECISION_SCHEMA
from harness.campaign.peers import PEERS, PeerError, model_policy
from harness.live.peers import live_peer
from harness.live.peers.standalone import mapped_decisions, peer_before_none
from harness.processes.redis_server import RedisServer
from targets.algorithms import Policy
from tests.recorded import peer_model_agrees, planned

HAVE_REDIS = shutil.which("redis-server") is not None
needs_redis = pytest.mark.skipif(not HAVE_REDIS and os.environ.get("CI", "").lower() != "true",
                                 reason="redis-server not on PATH (CI never skips this)")
POLICY = Policy(3, 1)
WARM = "warm"
PLAN = [(0.0, "A", 5), (0.0, None, 3), (0.6, "A", 2), (1.4, "A", 4)]
"""(offset from a wall-clock half second, API key or None, requests): 3 per 1 s."""
FIRST = [1, 1, 1, 0, 0]
# hand-computed, the first burst at k + 0.5 s (k whole):
# - fixed window: the window starts at the first hit (k + 0.5) and lasts 1 s: 0.6 s later both
#   refused; at 1.4 s a new window from that hit: 3 of 4
# - moving window: the 3 admitted at 0 are older than 1 s at 1.4 s: 3 of 4
# - sliding window counter, memory (windows aligned to the clock): at k + 1.1 the estimate is
#   3 * 0.9 = 2.7, floor 2 + 1 <= 3: one admitted; at k + 1.9, 3 * 0.1 + 1 = 1.3 then 2.3: two
# - sliding window counter, Redis (the counters anchored to the first hit): at + 0.6 the same
#   window (3 counted); at + 1.4 shifted, floor(3 * 0.6) = 1 + 0, + 1: two
EXPECTED = {
    "fixed-window": [FIRST, [0, 0], [1, 1, 1, 0]],
    "moving-window": [FIRST, [0, 0], [1, 1, 1, 0]],
    "sliding-window-counter": [FIRST, [1, 0], [1, 1, 0, 0]],
    "sliding-window-counter-redis": [FIRST, [0, 0], [1, 1, 0, 0]],
}
CLOCK_ALIGNED = ("slowapi-fixed-window", "slowapi-fixed-window-redis")
"""The peers the suite's clock-aligned ``fixed_window`` misses: limits' window is not it."""


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with RedisServer() as server:
        yield server.url


def _replay(url: str) -> tuple[dict[str, int], httpx.Response]:
    """The plan from the next wall-clock half second; (status per request id, the last refusal)."""
    statuses: dict[str, int] = {}
    refused = None
    with httpx.Client(timeout=5) as http:
        # a first decision on a key of its own: connections open and limits' scripts loaded, so
        # the plan's first hit (where an anchored window opens) is near its time
        http.get(f"{url}/api/items", headers={"x-api-key": WARM, "x-request-id": WARM})
        time.sleep((0.5 - time.time() % 1) % 1)
        start = time.monotonic()
        for at, key, n in PLAN:
            time.sleep(max(0.0, start + at - time.monotonic()))
            for i in range(n):
                rid = f"{key or 'ip'}-{at}-{i}"
                headers = {"x-request-id": rid, "x-client-id": key or "anon", "x-client-class": "legit",
                           **({"x-api-key": key} if key else {})}
                answer = http.get(f"{url}/api/items", headers=headers)
                statuses[rid] = answer.status_code
                refused = answer if answer.status_code == 429 else refused
    assert refused is not None  # 5 at once on a fresh key of 3 per 1 s
    return statuses, refused


@pytest.mark.parametrize("name", [n for n, p in PEERS.items() if p.system == "slowapi"])
def test_the_mapped_model_decides_the_hand_computed_schedule_per_strategy_and_store(name):
    """The hand-computed outcomes, on the times the plan means: exact, as no machine shifts them."""
    times, keys, ids = planned(PLAN, 100.5)  # the first burst at k + 0.5 s
    decided = dict(zip(ids, mapped_decisions(name, POLICY, times, keys)))
    strategy = name.removeprefix("slowapi-")
    expected = EXPECTED.get(strategy, EXPECTED[strategy.removesuffix("-redis")])
    assert [[int(decided[f"A-{at}-{i}"]) for i in range(n)] for at, key, n in PLAN if key] == expected
    assert [decided[f"ip-0.0-{i}"] for i in range(3)] == [True] * 3  # no key: by address, its own counter
    if name in CLOCK_ALIGNED:  # the clock-aligned model admits the burst at k + 1.1 (a new clock window),
        aligned = dict(zip(ids, mapped_decisions(name, POLICY, times, keys, instead="fixed_window")))
        assert [aligned[f"A-0.6-{i}"] for i in range(2)] == [True, True]  # which limits' anchored window refuses


@pytest.mark.parametrize("name", [pytest.param(n, marks=[needs_redis] if p.uses_redis else [])
                                  for n, p in PEERS.items() if p.system == "slowapi"])
@pytest.mark.process
def test_slowapi_decides_as_its_mapped_model_on_its_own_times_per_strategy_and_store(name, tmp_path, request):
    spec = PEERS[name]
    env = {**os.environ, "REDIS_URL": request.getfixturevalue("redis_url")} if spec.uses_redis else None
    with peer_before_none(name, POLICY, tmp_path, env=env) as (url, logs):
        app = psutil.Process(next(p.pid for p in psutil.process_iter(["cmdline"])
                                  if str(tmp_path) in " ".join(p.info["cmdline"] or []) and "slowapi_app" in " ".join(p.info["cmdline"])))
        statuses, refused = _replay(url)
    assert not app.is_running() or app.status() == psutil.STATUS_ZOMBIE
    assert [statuses[f"ip-0.0-{i}"] for i in range(3)] == [200] * 3  # a fresh address key: 3 of 3 in any timing
    # what real users get: slowapi's own JSON refusal, no Retry-After (its headers are off by default)
    assert refused.json() == {"error": "Rate limit exceeded: 3 per 1 second"} and "retry-after" not in refused.headers

    table = live_peer(name).decisions(logs, store=spec.store)
    assert table.schema == DECISION_SCHEMA
    df = table.to_pandas().query("request_id != @WARM")
    assert dict(zip(df["request_id"], df["allowed"])) == {rid: s == 200 for rid, s in statuses.items()}
    assert set(df["key"]) == {"A", "127.0.0.1"} and set(df["algorithm"]) == {name} and set(df["store"]) == {spec.store}
    assert (df["t"] >= df["arrived_t"]).all() and set(df["client_class"]) == {"legit"}
    # the mapped model on limits' own decision times: request by request the same, for every
    # strategy and store (limits' first-hit anchored windows have models of their own)
    peer_model_agrees(name, POLICY, df)


@pytest.mark.parametrize(("policy", "message"), [
    (Policy(2.5, 1), "limit 2.5 per 1 s; limits takes a whole number of requests per a whole number of seconds"),
    (Policy(10, 0.5), "limit 10 per 0.5 s"),
    (Policy(10, 1, 20), "burst 20; limits has no burst (it must equal the limit)"),
])
def test_a_policy_limits_cannot_express_is_refused(policy, message):
    with pytest.raises(PeerError, match="peer slowapi: ") as exc:
        model_policy("slowapi-moving-window", policy)
    assert message in str(exc.value)


def test_each_strategy_maps_to_the_suites_model():
    assert model_policy("slowapi-moving-window", Policy(10, 60)) == ("sliding_log", Policy(10, 60))
    assert model_policy("slowapi-fixed-window-redis", Policy(10, 60)) == ("limits_fixed_window", Policy(10, 60))
    assert model_policy("slowapi-sliding-window-counter-redis", Policy(10, 2)) == (
        "limits_sliding_window_counter_redis", Policy(10, 2))
    algorithm, mapped = model_policy("slowapi-sliding-window-counter", Policy(10, 2))
    assert algorithm == "sliding_window_counter" and mapped.limit == 11 - 0.25e-6
