"""The store around the scripts: TTLs, key layout, server time, NOSCRIPT reload, bad REDIS_URLs."""

from __future__ import annotations

import math
import time

import pytest
import redis

from harness.processes.redis_server import RedisServer
from targets.algorithms import ALGORITHMS, Policy
from targets.stores.redis import SUFFIXES, RedisConfigError, RedisStore
from targets.stores.redis.connect import check
from targets.stores.redis.scripts import hash_tag, ttl_ms


@pytest.mark.parametrize("name", sorted(SUFFIXES))
def test_every_decision_leaves_a_ttl(name: str, client: redis.Redis, namespace: str) -> None:
    algorithm = ALGORITHMS[name]
    params = algorithm.params_from_policy(Policy(limit=5, window_s=2.0))
    store = RedisStore(client, algorithm, params, namespace=namespace)
    for _ in range(8):  # admits then rejects, on Redis server time
        decision = store.decide("client-1")
        assert decision.remaining >= 0 and decision.reset_s >= 0
    expected = ttl_ms(algorithm.state_ttl(params))
    for key in store.codec.keys("client-1"):
        ttl = client.pttl(key)
        if expected == 0:  # concurrency: an in-flight count must not expire under running requests
            assert ttl == -1
        else:
            assert 0 < ttl <= expected, f"{key}: PTTL {ttl}, expected in (0, {expected}]"


def test_concurrency_release_gives_slots_back(client: redis.Redis, namespace: str) -> None:
    algorithm = ALGORITHMS["concurrency"]
    store = RedisStore(client, algorithm, algorithm.params_type(2.0), namespace=namespace)
    assert [store.decide("k").allowed for _ in range(3)] == [True, True, False]
    store.release("k")
    assert store.decide("k").allowed
    store.release("k", cost=5)
    assert client.exists(*store.codec.keys("k")) == 0  # back to zero: deleted, as a fresh key


def test_keys_share_one_hash_tag(client: redis.Redis, namespace: str) -> None:
    store = RedisStore(client, ALGORITHMS["sliding_log"], ALGORITHMS["sliding_log"].params_type(3.0, 1.0), namespace=namespace)
    for key in ["", "}", "{a}", "a}b", "%7D", "user:42"]:
        keys = store.codec.keys(key)
        assert len({redis.cluster.key_slot(k.encode()) for k in keys}) == 1, keys
        assert store.decide(key).allowed
    assert hash_tag("}") != hash_tag("%7D") and hash_tag("") == "%"


def test_script_reloaded_after_script_flush(client: redis.Redis, namespace: str) -> None:
    store = RedisStore(client, ALGORITHMS["gcra"], ALGORITHMS["gcra"].params_type(1.0, 2.0), namespace=namespace)
    assert store.decide("k", 10.0).allowed
    client.script_flush()
    assert store.decide("k", 10.0).allowed
    assert not store.decide("k", 10.0).allowed


def test_a_decoding_client_is_refused(redis_server: RedisServer) -> None:
    client = redis.Redis.from_url(redis_server.url, decode_responses=True)
    with pytest.raises(RedisConfigError, match="decode_responses=False"):
        RedisStore(client, ALGORITHMS["gcra"], ALGORITHMS["gcra"].params_type(1.0, 2.0))
    client.close()


def test_unreachable_url_is_one_clear_error() -> None:
    server = RedisServer()
    server.close()  # its port is free: nothing listens there
    with pytest.raises(RedisConfigError, match="cannot use Redis there"):
        check(server.url, timeout_s=0.5)


@pytest.mark.parametrize("url", ["http://localhost:6379", "not a url"])
def test_malformed_url_is_one_clear_error(url: str) -> None:
    with pytest.raises(RedisConfigError, match="not a Redis URL"):
        check(url)


def test_cluster_mode_against_a_plain_redis_is_refused(redis_server: RedisServer) -> None:
    with pytest.raises(RedisConfigError, match="not a cluster"):
        check(redis_server.url, cluster=True)


def test_no_ttl_override_means_no_expiry() -> None:
    assert ttl_ms(math.inf) == 0 and ttl_ms(0.0001) == 1 and ttl_ms(2.0) == 2000


def test_a_window_keeps_the_ttl_of_its_first_write(client: redis.Redis, namespace: str) -> None:
    """Fixed window and counter: rewrites within a window keep the TTL set by its first write
    (SET ... KEEPTTL), which outlasts the window; a new window sets it afresh."""
    for name in ("fixed_window", "sliding_window_counter"):
        algorithm = ALGORITHMS[name]
        store = RedisStore(client, algorithm, algorithm.params_type(100.0, 60.0), namespace=namespace)
        key = store.codec.keys(name)[0]
        expected = ttl_ms(algorithm.state_ttl(store.params))
        assert store.decide(name, 600.0).allowed
        first = client.pttl(key)
        assert expected - 1000 < first <= expected
        client.pexpire(key, 5000)  # a marker: kept within the window, replaced in the next one
        assert store.decide(name, 630.0).allowed  # the same window
        assert client.pttl(key) <= 5000
        assert store.decide(name, 660.0).allowed  # the next window
        assert client.pttl(key) > 5000


def test_sliding_log_meta_never_outlives_its_log(client: redis.Redis, namespace: str) -> None:
    """A rejection that drops expired entries rewrites the meta with KEEPTTL: meta and log keep
    one expiry (set by the last admit), so the meta never points at an expired log."""
    algorithm = ALGORITHMS["sliding_log"]
    store = RedisStore(client, algorithm, algorithm.params_type(2.0, 1.0), namespace=namespace)
    log, meta = store.codec.keys("k")
    assert store.decide("k", 100.0).allowed and store.decide("k", 100.5).allowed
    time.sleep(0.2)
    rejected = store.decide("k", 101.2, cost=2.0)  # drops the entry of t=100, still too much
    assert not rejected.allowed and rejected.retry_after_s == pytest.approx(0.3)
    meta_ttl, log_ttl = client.pipeline(transaction=True).pttl(meta).pttl(log).execute()  # one instant
    assert abs(meta_ttl - log_ttl) <= 1 and meta_ttl < 850


def test_sliding_log_lease_takes_whole_amounts(client: redis.Redis, namespace: str) -> None:
    algorithm = ALGORITHMS["sliding_log"]
    store = RedisStore(client, algorithm, algorithm.params_type(12.0, 10.0), namespace=namespace, ttl_s=60)
    grants = [store.lease("k", 50.0 + i, 1.0, 5.0) for i in range(4)]
    assert [(d.allowed, granted) for d, granted in grants] == [(True, 5.0), (True, 5.0), (True, 2.0), (False, 1.0)]
    assert grants[2][0].remaining == 0.0 and grants[3][0].retry_after_s == 7.0  # the first lease expires at 60
